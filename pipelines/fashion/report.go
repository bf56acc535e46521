package main

import (
	"context"
	"image"
	"image/color"
	"image/png"
	"io"
	"sort"
	"strconv"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/beamgpu/beamgpu/pipelines/internal/job"
	"github.com/beamgpu/beamgpu/transforms/step"
	"github.com/beamgpu/beamgpu/transforms/step/stepbeam"
	"github.com/beamgpu/beamgpu/transforms/tensor"
	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"
)

// ClassNames are Fashion-MNIST's ten classes.
var ClassNames = []string{"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"}

// Output files.
const (
	metricsFile     = "metrics.json"
	predictionsFile = "predictions.csv"
	confusionFile   = "confusion.png"
)

// classMetrics are one class's precision and recall over rows with a known label.
type classMetrics struct {
	Class     int      `json:"class"`
	Name      string   `json:"name"`
	Support   int      `json:"support"`
	Precision *float64 `json:"precision"`
	Recall    *float64 `json:"recall"`
}

// metrics is metrics.json.
type metrics struct {
	Count     int            `json:"count"`
	Labelled  int            `json:"labelled"`
	Failed    int            `json:"failed"`
	Accuracy  *float64       `json:"accuracy"`
	PerClass  []classMetrics `json:"per_class"`
	Confusion [][]int        `json:"confusion"` // [label][predicted]
}

// reportFn gathers every prediction and failure (one key) and writes the outputs.
type reportFn struct {
	Output  string
	Sources int

	predicted, failedRows, rejected, failures, labelled, correct beam.Counter
}

func (f *reportFn) Setup() {
	f.predicted = beam.NewCounter(stepbeam.Namespace, "records_predicted")
	f.failedRows = beam.NewCounter(stepbeam.Namespace, "records_failed")
	f.rejected = beam.NewCounter(stepbeam.Namespace, "records_rejected")
	f.failures = beam.NewCounter(stepbeam.Namespace, "failures")
	f.labelled = beam.NewCounter(stepbeam.Namespace, "records_labelled")
	f.correct = beam.NewCounter(stepbeam.Namespace, "records_correct")
}

type row struct {
	source          string
	index           int
	label, predicts int32
}

func (f *reportFn) ProcessElement(ctx context.Context, _ int, predsIter func(*tensor.Predictions) bool, failIter func(*step.Failure) bool) error {
	var rows []row
	classes := len(ClassNames)
	var p tensor.Predictions
	for predsIter(&p) {
		for i, c := range p.Predicted {
			r := row{source: p.Source, index: p.Offset + i, label: -1, predicts: c}
			if p.Labels != nil {
				r.label = p.Labels[i]
			}
			rows = append(rows, r)
		}
		classes = max(classes, p.Classes)
		p = tensor.Predictions{}
	}
	var failures []step.Failure
	var fl step.Failure
	failedRows := 0
	for failIter(&fl) {
		failures = append(failures, fl)
		failedRows += fl.Items
		if fl.Step == tensor.StepDecode.Name() {
			f.rejected.Inc(ctx, int64(fl.Items))
		}
	}
	sort.Slice(rows, func(i, j int) bool {
		return rows[i].source < rows[j].source || rows[i].source == rows[j].source && rows[i].index < rows[j].index
	})
	f.predicted.Inc(ctx, int64(len(rows)))
	f.failedRows.Inc(ctx, int64(failedRows))
	f.failures.Inc(ctx, int64(len(failures)))

	m := computeMetrics(rows, classes)
	m.Failed = failedRows
	f.labelled.Inc(ctx, int64(m.Labelled))
	for c := range m.Confusion {
		f.correct.Inc(ctx, int64(m.Confusion[c][c]))
	}
	if err := job.WriteJSON(ctx, job.Join(f.Output, metricsFile), m); err != nil {
		return err
	}
	if err := job.WriteFile(ctx, job.Join(f.Output, predictionsFile), func(w io.Writer) error { return writeCSV(w, rows, f.Sources > 1) }); err != nil {
		return err
	}
	img := confusionImage(m.Confusion)
	if err := job.WriteFile(ctx, job.Join(f.Output, confusionFile), func(w io.Writer) error { return png.Encode(w, img) }); err != nil {
		return err
	}
	return job.WriteFailures(ctx, f.Output, failures)
}

func computeMetrics(rows []row, classes int) metrics {
	m := metrics{Count: len(rows), Confusion: make([][]int, classes)}
	for i := range m.Confusion {
		m.Confusion[i] = make([]int, classes)
	}
	correct := 0
	for _, r := range rows {
		if r.label < 0 || int(r.label) >= classes || int(r.predicts) >= classes {
			continue
		}
		m.Labelled++
		m.Confusion[r.label][r.predicts]++
		if r.label == r.predicts {
			correct++
		}
	}
	ratio := func(a, b int) *float64 {
		if b == 0 {
			return nil
		}
		v := float64(a) / float64(b)
		return &v
	}
	m.Accuracy = ratio(correct, m.Labelled)
	for c := 0; c < classes; c++ {
		support, predicted := 0, 0
		for k := 0; k < classes; k++ {
			support += m.Confusion[c][k]
			predicted += m.Confusion[k][c]
		}
		name := strconv.Itoa(c)
		if c < len(ClassNames) {
			name = ClassNames[c]
		}
		m.PerClass = append(m.PerClass, classMetrics{Class: c, Name: name, Support: support,
			Precision: ratio(m.Confusion[c][c], predicted), Recall: ratio(m.Confusion[c][c], support)})
	}
	return m
}

// writeCSV writes predictions.csv: index,label,predicted (label empty when
// unknown), with a source column first when there are several sources.
func writeCSV(w io.Writer, rows []row, withSource bool) error {
	bw := make([]byte, 0, 32*len(rows)+64)
	if withSource {
		bw = append(bw, "source,"...)
	}
	bw = append(bw, "index,label,predicted\n"...)
	for _, r := range rows {
		if withSource {
			bw = append(append(bw, r.source...), ',')
		}
		bw = strconv.AppendInt(bw, int64(r.index), 10)
		bw = append(bw, ',')
		if r.label >= 0 {
			bw = strconv.AppendInt(bw, int64(r.label), 10)
		}
		bw = append(bw, ',')
		bw = strconv.AppendInt(bw, int64(r.predicts), 10)
		bw = append(bw, '\n')
	}
	_, err := w.Write(bw)
	return err
}

// confusionImage draws the confusion matrix: rows are true labels, columns
// predictions, each cell shaded by its share of the row and labelled with
// its count; class numbers on the margins.
func confusionImage(conf [][]int) *image.RGBA {
	const cell, margin = 44, 24
	n := len(conf)
	img := image.NewRGBA(image.Rect(0, 0, margin+n*cell+2, margin+n*cell+2))
	for i := range img.Pix {
		img.Pix[i] = 255
	}
	d := &font.Drawer{Dst: img, Face: basicfont.Face7x13}
	text := func(x, y int, s string, c color.Color) {
		d.Src = image.NewUniform(c)
		d.Dot = fixed.P(x-len(s)*7/2, y+4)
		d.DrawString(s)
	}
	for r := 0; r < n; r++ {
		total := 0
		for _, v := range conf[r] {
			total += v
		}
		text(margin/2, margin+r*cell+cell/2, strconv.Itoa(r), color.Black)
		text(margin+r*cell+cell/2, margin/2, strconv.Itoa(r), color.Black)
		for c := 0; c < n; c++ {
			share := 0.0
			if total > 0 {
				share = float64(conf[r][c]) / float64(total)
			}
			shade := color.RGBA{uint8(255 - 200*share), uint8(255 - 150*share), 255, 255}
			if r == c {
				shade = color.RGBA{uint8(255 - 215*share), uint8(255 - 120*share), uint8(255 - 215*share), 255}
			}
			for y := 1; y < cell; y++ {
				for x := 1; x < cell; x++ {
					img.Set(margin+c*cell+x, margin+r*cell+y, shade)
				}
			}
			ink := color.Color(color.Black)
			if share > 0.5 {
				ink = color.White
			}
			text(margin+c*cell+cell/2, margin+r*cell+cell/2, strconv.Itoa(conf[r][c]), ink)
		}
	}
	return img
}
