package onnx_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/beamgpu/beamgpu/transforms/nd"
	"github.com/beamgpu/beamgpu/transforms/onnx/onnxpb"
	"github.com/beamgpu/beamgpu/transforms/onnx/onnxtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// refMatMul is NumPy's matmul in float64, written apart from the
// runtime's: 1-D operands promoted and their axis dropped, batch axes
// broadcast. It returns the shape, values and magnitudes.
func refMatMul(a, b []float64, as, bs []int) (shape []int, y, mag []float64) {
	a2, b2 := as, bs
	if len(as) == 1 {
		a2 = []int{1, as[0]}
	}
	if len(bs) == 1 {
		b2 = []int{bs[0], 1}
	}
	m, k, n := a2[len(a2)-2], a2[len(a2)-1], b2[len(b2)-1]
	ab, bb := a2[:len(a2)-2], b2[:len(b2)-2]
	rank := max(len(ab), len(bb))
	batch := make([]int, rank)
	for i := range batch {
		da, db := 1, 1
		if j := i - (rank - len(ab)); j >= 0 {
			da = ab[j]
		}
		if j := i - (rank - len(bb)); j >= 0 {
			db = bb[j]
		}
		batch[i] = max(da, db)
	}
	idx := make([]int, rank)
	nb := numelOf(batch)
	y, mag = make([]float64, nb*m*n), make([]float64, nb*m*n)
	flat := func(sub []int) int { // index into a batch of shape sub, broadcasting
		o := 0
		for j, d := range sub {
			i := idx[rank-len(sub)+j]
			if d == 1 {
				i = 0
			}
			o = o*d + i
		}
		return o
	}
	for t := range nb {
		unflat(t, batch, idx)
		ao, bo := flat(ab)*m*k, flat(bb)*k*n
		for i := range m {
			for j := range n {
				var s, g float64
				for p := range k {
					v := a[ao+i*k+p] * b[bo+p*n+j]
					s += v
					g += math.Abs(v)
				}
				y[(t*m+i)*n+j], mag[(t*m+i)*n+j] = s, g
			}
		}
	}
	shape = append([]int{}, batch...)
	if len(as) > 1 {
		shape = append(shape, m)
	}
	if len(bs) > 1 {
		shape = append(shape, n)
	}
	return shape, y, mag
}

// MatMul: 1-D operands, batches broadcast either way, B constant or not,
// float32 (gemm) and the other types (loops).
func TestMatMulShapes(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	for _, tc := range []struct{ a, b, want []int }{
		{[]int{3}, []int{3}, []int{}},
		{[]int{4}, []int{4, 5}, []int{5}},
		{[]int{2, 3, 4}, []int{4}, []int{2, 3}},
		{[]int{5}, []int{2, 5, 3}, []int{2, 3}},
		{[]int{2, 3, 4}, []int{4, 5}, []int{2, 3, 5}},
		{[]int{3, 4}, []int{2, 4, 5}, []int{2, 3, 5}},
		{[]int{2, 1, 3, 4}, []int{3, 4, 6}, []int{2, 3, 3, 6}},
		{[]int{1, 3, 4}, []int{2, 4, 6}, []int{2, 3, 6}},
		{[]int{2, 3, 4}, []int{1, 4, 5}, []int{2, 3, 5}},
		{[]int{3, 4}, []int{1, 1, 4, 5}, []int{1, 1, 3, 5}},
		{[]int{2, 1, 3, 4}, []int{1, 4, 4, 2}, []int{2, 4, 3, 2}},
		{[]int{6, 70, 33}, []int{33, 40}, []int{6, 70, 40}},
		{[]int{130, 17}, []int{17, 90}, []int{130, 90}},
		{[]int{3, 0, 4}, []int{4, 5}, []int{3, 0, 5}},
		{[]int{2, 3, 0}, []int{0, 5}, []int{2, 3, 5}},
	} {
		for _, constB := range []bool{false, true} {
			t.Run(fmt.Sprintf("%v_x_%v_const%t", tc.a, tc.b, constB), func(t *testing.T) {
				a, b := randF32(r, tc.a...), randF32(r, tc.b...)
				shape, want, mag := refMatMul(nd.Float64s(a), nd.Float64s(b), tc.a, tc.b)
				require.Equal(t, tc.want, shape)
				out := mustRun(t, 13, "MatMul", []nd.Array{a, b}, []bool{false, constB}, []string{"y"})
				require.Equal(t, tc.want, out[0].Shape)
				requireClose(t, want, out[0], 1e-5, mag)
				for _, typ := range []nd.DType{nd.Float64, nd.Int32, nd.Int64, nd.Uint32, nd.Uint64} {
					ai, _ := nd.Convert(roundScaled(a, 10), typ)
					bi, _ := nd.Convert(roundScaled(b, 10), typ)
					if typ == nd.Uint32 || typ == nd.Uint64 {
						ai, _ = nd.Convert(absArray(roundScaled(a, 10)), typ)
						bi, _ = nd.Convert(absArray(roundScaled(b, 10)), typ)
					}
					_, want, _ := refMatMul(nd.Float64s(ai), nd.Float64s(bi), tc.a, tc.b)
					out := mustRun(t, 13, "MatMul", []nd.Array{ai, bi}, []bool{false, constB}, []string{"y"})
					require.Equal(t, typ, out[0].Type)
					assert.Equal(t, want, nd.Float64s(out[0]), "%v", typ)
				}
			})
		}
	}
}

func roundScaled(a nd.Array, f float32) nd.Array {
	s := append([]float32{}, nd.MustAs[float32](a)...)
	for i := range s {
		s[i] = float32(math.Round(float64(s[i] * f)))
	}
	return nd.Of(s, a.Shape...)
}

func absArray(a nd.Array) nd.Array {
	s := append([]float32{}, nd.MustAs[float32](a)...)
	for i := range s {
		s[i] = float32(math.Abs(float64(s[i])))
	}
	return nd.Of(s, a.Shape...)
}

// MatMul's shapes that do not multiply, and its types by opset.
func TestMatMulErrors(t *testing.T) {
	r := rand.New(rand.NewPCG(43, 44))
	for name, tc := range map[string]struct {
		opset int
		a, b  nd.Array
		want  string
	}{
		"inner":  {13, randF32(r, 2, 3), randF32(r, 4, 5), "input A has shape [2x3], B [4x5]: A's 3 columns and B's 4 rows differ"},
		"batch":  {13, randF32(r, 2, 2, 3), randF32(r, 3, 3, 5), "batch axes [2] and [3] cannot be broadcast"},
		"scalar": {13, nd.Scalar(float32(1)), randF32(r, 4), "MatMul takes no scalars"},
		"int8":   {13, nd.Zeros(nd.Int8, 2, 2), nd.Zeros(nd.Int8, 2, 2), "MatMul takes float32, float64 or 32- and 64-bit integers, not int8"},
		"int32 before 9": {1, nd.Zeros(nd.Int32, 2, 2), nd.Zeros(nd.Int32, 2, 2),
			"MatMul before opset 9 takes float32 or float64, not int32"},
	} {
		t.Run(name, func(t *testing.T) {
			err := loadErr(tc.opset, "MatMul", []nd.Array{tc.a, tc.b}, nil, []string{"y"})
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// refGemm is alpha op(A) op(B) + beta C (C broadcast), in float64.
func refGemm(a, b, c []float64, cs []int, m, k, n int, transA, transB bool, alpha, beta float64) (y, mag []float64) {
	y, mag = make([]float64, m*n), make([]float64, m*n)
	for i := range m {
		for j := range n {
			var s, g float64
			for p := range k {
				av, bv := a[i*k+p], b[p*n+j]
				if transA {
					av = a[p*m+i]
				}
				if transB {
					bv = b[j*k+p]
				}
				s += av * bv
				g += math.Abs(av * bv)
			}
			s *= alpha
			g *= math.Abs(alpha)
			if c != nil {
				ci, cj := i, j
				if len(cs) < 2 || cs[0] == 1 {
					ci = 0
				}
				if len(cs) == 0 || cs[len(cs)-1] == 1 {
					cj = 0
				}
				cols := 1
				if len(cs) > 0 {
					cols = cs[len(cs)-1]
				}
				s += beta * c[ci*cols+cj]
				g += math.Abs(beta * c[ci*cols+cj])
			}
			y[i*n+j], mag[i*n+j] = s, g
		}
	}
	return y, mag
}

// Gemm with each form of C's broadcast, transposes, alpha and beta, B
// constant (packed) or not, float32 and the other types.
func TestGemmBroadcastC(t *testing.T) {
	r := rand.New(rand.NewPCG(45, 46))
	const m, k, n = 5, 7, 6
	for _, cs := range [][]int{nil, {}, {1}, {n}, {1, n}, {m, 1}, {m, n}, {1, 1}} {
		for _, tr := range [][2]bool{{false, false}, {true, false}, {false, true}, {true, true}} {
			for _, constB := range []bool{false, true} {
				name := fmt.Sprintf("C%v_trans%v_const%t", cs, tr, constB)
				if cs == nil {
					name = fmt.Sprintf("noC_trans%v_const%t", tr, constB)
				}
				t.Run(name, func(t *testing.T) {
					as, bs := []int{m, k}, []int{k, n}
					if tr[0] {
						as = []int{k, m}
					}
					if tr[1] {
						bs = []int{n, k}
					}
					a, b := randF32(r, as...), randF32(r, bs...)
					in := []nd.Array{a, b}
					var cv []float64
					if cs != nil {
						c := randF32(r, cs...)
						in = append(in, c)
						cv = nd.Float64s(c)
					}
					attrs := []*onnxpb.AttributeProto{onnxtest.Float("alpha", 0.5), onnxtest.Float("beta", -2),
						onnxtest.Int("transA", b2i(tr[0])), onnxtest.Int("transB", b2i(tr[1]))}
					want, mag := refGemm(nd.Float64s(a), nd.Float64s(b), cv, cs, m, k, n, tr[0], tr[1], 0.5, -2)
					out := mustRun(t, 13, "Gemm", in, []bool{false, constB}, []string{"y"}, attrs...)
					require.Equal(t, []int{m, n}, out[0].Shape)
					requireClose(t, want, out[0], 1e-5, mag)
					for _, typ := range []nd.DType{nd.Float64, nd.Int64, nd.Int32} {
						conv := make([]nd.Array, len(in))
						var cv []float64
						for i, x := range in {
							conv[i], _ = nd.Convert(roundScaled(x, 10), typ)
							if i == 2 {
								cv = nd.Float64s(conv[i])
							}
						}
						attrs := []*onnxpb.AttributeProto{onnxtest.Float("beta", -2), onnxtest.Int("transA", b2i(tr[0])), onnxtest.Int("transB", b2i(tr[1]))}
						want, _ := refGemm(nd.Float64s(conv[0]), nd.Float64s(conv[1]), cv, cs, m, k, n, tr[0], tr[1], 1, -2)
						out := mustRun(t, 13, "Gemm", conv, []bool{false, constB}, []string{"y"}, attrs...)
						assert.Equal(t, want, nd.Float64s(out[0]), "%v", typ)
					}
				})
			}
		}
	}
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// Gemm's opset forms: before 7, C is M x N unless broadcast=1 (then it
// broadcasts); before 11 C is required; beta 0 ignores C, NaN included.
func TestGemmOpsets(t *testing.T) {
	r := rand.New(rand.NewPCG(47, 48))
	a, b, row, full := randF32(r, 2, 3), randF32(r, 3, 4), randF32(r, 4), randF32(r, 2, 4)
	want, mag := refGemm(nd.Float64s(a), nd.Float64s(b), nd.Float64s(row), []int{4}, 2, 3, 4, false, false, 1, 1)
	out := mustRun(t, 6, "Gemm", []nd.Array{a, b, row}, nil, []string{"y"}, onnxtest.Int("broadcast", 1))
	requireClose(t, want, out[0], 1e-5, mag)
	want, mag = refGemm(nd.Float64s(a), nd.Float64s(b), nd.Float64s(full), []int{2, 4}, 2, 3, 4, false, false, 1, 1)
	out = mustRun(t, 1, "Gemm", []nd.Array{a, b, full}, nil, []string{"y"})
	requireClose(t, want, out[0], 1e-5, mag)
	err := loadErr(6, "Gemm", []nd.Array{a, b, row}, nil, []string{"y"})
	assert.ErrorContains(t, err, "input C has shape [4], want [2x4]: before opset 7, C broadcasts only with broadcast=1")
	err = loadErr(7, "Gemm", []nd.Array{a, b, row}, nil, []string{"y"}, onnxtest.Int("broadcast", 1))
	assert.ErrorContains(t, err, "attribute broadcast is not supported")
	err = loadErr(9, "Gemm", []nd.Array{a, b}, nil, []string{"y"})
	assert.ErrorContains(t, err, "2 inputs, want 3")
	want, mag = refGemm(nd.Float64s(a), nd.Float64s(b), nil, nil, 2, 3, 4, false, false, 1, 1)
	out = mustRun(t, 11, "Gemm", []nd.Array{a, b}, nil, []string{"y"})
	requireClose(t, want, out[0], 1e-5, mag)
	nan := nd.Of([]float32{float32(math.NaN())}, 1)
	out = mustRun(t, 13, "Gemm", []nd.Array{a, b, nan}, nil, []string{"y"}, onnxtest.Float("beta", 0))
	requireClose(t, want, out[0], 1e-5, mag)
	err = loadErr(13, "Gemm", []nd.Array{a, b, randF32(r, 3, 4)}, nil, []string{"y"})
	assert.ErrorContains(t, err, "input C has shape [3x4], which does not broadcast to [2x4]")
	err = loadErr(13, "Gemm", []nd.Array{a, randF32(r, 4, 3)}, nil, []string{"y"})
	assert.ErrorContains(t, err, "the inner dimensions 3 and 4 differ")
	err = loadErr(13, "Gemm", []nd.Array{randF32(r, 2, 3, 1), b}, nil, []string{"y"})
	assert.ErrorContains(t, err, "Gemm takes 2-D A and B")
	err = loadErr(13, "Gemm", []nd.Array{a, b}, nil, []string{"y"}, onnxtest.Int("transA", 2))
	assert.ErrorContains(t, err, "attribute transA is 2, want 0 or 1")
}
