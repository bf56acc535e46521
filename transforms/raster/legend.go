package raster

import (
	"fmt"
	"image"
	"image/color"
	"image/draw"

	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"
)

// Range of NDVI values the legend's colour bar spans.
const (
	legendLo = -0.4
	legendHi = 1.0
)

// NDVILegend draws the legend of NDVIColor: a colour bar from -0.4 to 1.0
// with its values marked at each colour stop, titled, on white.
func NDVILegend() *image.NRGBA {
	const (
		w, h       = 520, 92
		barX, barW = 30, 460
		barY, barH = 30, 24
	)
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	draw.Draw(img, img.Bounds(), image.NewUniform(color.White), image.Point{}, draw.Src)
	for x := 0; x < barW; x++ {
		v := float32(legendLo + (legendHi-legendLo)*(float64(x)+0.5)/barW)
		c := NDVIColor(v)
		for y := 0; y < barH; y++ {
			img.SetNRGBA(barX+x, barY+y, c)
		}
	}
	black := color.NRGBA{0, 0, 0, 255}
	for x := barX - 1; x <= barX+barW; x++ { // frame
		img.SetNRGBA(x, barY-1, black)
		img.SetNRGBA(x, barY+barH, black)
	}
	for y := barY - 1; y <= barY+barH; y++ {
		img.SetNRGBA(barX-1, y, black)
		img.SetNRGBA(barX+barW, y, black)
	}
	d := &font.Drawer{Dst: img, Src: image.NewUniform(black), Face: basicfont.Face7x13}
	text := func(x, y int, s string) {
		d.Dot = fixed.P(x, y)
		d.DrawString(s)
	}
	text(barX, 18, "NDVI = (B5 - B4) / (B5 + B4)      no-data: transparent")
	marks := []float64{legendLo}
	for _, s := range ndviStops {
		marks = append(marks, float64(s.v))
	}
	marks = append(marks, legendHi)
	for _, v := range marks {
		x := barX + int((v-legendLo)/(legendHi-legendLo)*barW+0.5)
		x = min(x, barX+barW-1)
		for y := barY + barH; y < barY+barH+5; y++ {
			img.SetNRGBA(x, y, black)
		}
		label := fmt.Sprintf("%.1f", v)
		text(x-len(label)*7/2, barY+barH+18, label)
	}
	for _, r := range []struct {
		lo, hi float64
		s      string
	}{{legendLo, -0.2, "water"}, {-0.2, 0.2, "bare soil"}, {0.2, legendHi, "vegetation"}} {
		mid := barX + int(((r.lo+r.hi)/2-legendLo)/(legendHi-legendLo)*barW)
		text(mid-len(r.s)*7/2, h-6, r.s)
	}
	return img
}
