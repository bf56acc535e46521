package gemm_test

import (
	"fmt"

	"github.com/beamgpu/beamgpu/transforms/gemm"
)

// A dense layer's product: C = X W + C, with C holding the bias beforehand
// (beta = 1).
func ExampleSgemm() {
	x := []float32{ // 2 x 3
		1, 2, 3,
		4, 5, 6,
	}
	w := []float32{ // 3 x 2
		1, 0,
		0, 1,
		1, 1,
	}
	c := []float32{ // 2 x 2, the bias in every row
		0.5, -0.5,
		0.5, -0.5,
	}
	gemm.Sgemm(false, false, 2, 2, 3, 1, x, 3, w, 2, 1, c, 2)
	fmt.Println(c)
	// Output: [4.5 4.5 10.5 10.5]
}

// Distances-style products Q Rᵀ against a reference packed once: the rows
// of R are the columns of op(B).
func ExampleSgemmPacked() {
	r := []float32{ // 3 reference rows of 2
		1, 0,
		0, 1,
		1, 1,
	}
	packed := gemm.Pack(true, 2, 3, r, 2) // op(B) = Rᵀ, 2 x 3
	q := []float32{2, 3}                  // one query
	dots := make([]float32, 3)
	gemm.SgemmPacked(0, false, 1, 1, q, 2, packed, 0, 3, 0, dots, 3)
	fmt.Println(dots)
	// Output: [2 3 5]
}
