
Blogits_qJ(ƒ/bı2VLœ%LL<ª½q`49a£,c=}¨F:%ÿ¨ÀU“