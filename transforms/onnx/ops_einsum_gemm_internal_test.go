package onnx

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/beamgpu/beamgpu/transforms/nd"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The product forms of Einsum, on package gemm, compute what the plain
// loop computes (within float32 rounding), on random odd sizes, with the
// operands and the output in every order the forms allow.
func TestEinsumGemmMatchesLoop(t *testing.T) {
	r := rand.New(rand.NewPCG(28, 12))
	for _, eq := range []string{
		"bhid,bhjd->bhij", // attention's scores: B transposed
		"bhij,bhjd->bhid", // attention's values
		"bij,bjk->bik",
		"ij,jk->ik",
		"ij,jk", // implicit output
		"ik,jk->ij",
		"ki,kj->ij",       // A transposed
		"bij,bjk->bki",    // the output permuted
		"ibj,jbk->bik",    // both operands permuted
		"abc,cd->abd",     // two m letters
		"i,j->ij",         // outer product
		"bi,bi->b",        // batched dot products
		"bn,nk->bk",       // a linear layer
		"nchw,kc->nkhw",   // a 1x1 convolution
		"bqhd,bkhd->bhqk", // attention with heads inside
	} {
		k, err := parseEinsum(eq, 2)
		require.NoError(t, err, eq)
		require.NotNil(t, k.product, "%s is a product form", eq)
		for trial := range 3 {
			size := make([]int, k.nlet)
			for i := range size {
				size[i] = 1 + r.IntN(9)
				if trial == 0 {
					size[i] = 1 + 2*r.IntN(20) // odd, up to 39
				}
			}
			in := make([]nd.Array, 2)
			for j, op := range k.ops {
				shape := make([]int, len(op))
				for a, l := range op {
					shape[a] = size[l]
				}
				in[j] = float32Array(shape)
				for i := range nd.MustAs[float32](in[j]) {
					nd.MustAs[float32](in[j])[i] = float32(r.NormFloat64())
				}
			}
			metas, err := k.Infer(ValueMetas(in))
			require.NoError(t, err)
			got, want := float32Array(metas[0].Shape), float32Array(metas[0].Shape)
			require.NoError(t, k.Run(in, []nd.Array{got}))
			loop := *k
			loop.product = nil
			require.NoError(t, loop.Run(in, []nd.Array{want}))
			g, w := nd.MustAs[float32](got), nd.MustAs[float32](want)
			for i := range w {
				assert.InDelta(t, w[i], g[i], 1e-5*(1+math.Abs(float64(w[i]))), "%s sizes %v: element %d", eq, size, i)
			}
		}
	}
}

// The forms that are not batched products of two operands keep the loop.
func TestEinsumNotProductForms(t *testing.T) {
	for _, eq := range []string{"ij->ji", "bij->bi", "ij,jk,kl->il", "ij,k->i"} {
		k, err := parseEinsum(eq, 1+strings.Count(eq, ","))
		require.NoError(t, err, eq)
		assert.Nil(t, k.product, eq)
	}
}

func float32Array(shape []int) nd.Array {
	return nd.Array{Type: nd.Float32, Shape: shape, Data: make([]byte, 4*numel(shape))}
}
