package tensor

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestShippedModel checks the model shipped with the fashion pipeline on the
// full Fashion-MNIST test set shipped beside it.
func TestShippedModel(t *testing.T) {
	m, err := LoadMLP(filepath.Join(fashionDir, "mlp-784-256-128-10.bgmlp"))
	require.NoError(t, err)
	require.NoError(t, m.CheckShape(784, 256, 128, 10))
	test, err := Scaler{Mode: ScaleUnit}.Apply(testSet(t))
	require.NoError(t, err)
	p, err := m.Predict(test)
	require.NoError(t, err)
	acc, n := p.Accuracy()
	assert.Equal(t, 10000, n)
	assert.GreaterOrEqual(t, acc, 0.88, "published MLP baseline is 0.8833")
	t.Logf("accuracy %.4f on %d test images", acc, n)
	// The same model on unscaled pixels is much worse: a reminder that the
	// pipeline must scale.
	raw, err := m.Predict(testSet(t))
	require.NoError(t, err)
	rawAcc, _ := raw.Accuracy()
	assert.Less(t, rawAcc, acc)
}
