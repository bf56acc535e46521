package main

import (
	"context"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"io"
	"sort"
	"strconv"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/beamgpu/beamgpu/pipelines/internal/jobfiles"
	"github.com/beamgpu/beamgpu/transforms/inference"
	"github.com/beamgpu/beamgpu/transforms/nd"
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
// outputFiles are the files a run writes at the output's root; a run
// removes those of the previous run first.
var outputFiles = []string{metricsFile, predictionsFile, confusionFile, jobfiles.FailedFile}

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
	Run       runInfo        `json:"run"`
	Count     int            `json:"count"`
	Labelled  int            `json:"labelled"`
	Failed    int            `json:"failed"`
	Accuracy  *float64       `json:"accuracy"`
	PerClass  []classMetrics `json:"per_class"`
	Confusion [][]int        `json:"confusion"` // [label][predicted]
	// Stub is set when steps ran their stand-ins: the predictions are not results.
	Stub      bool     `json:"stub"`
	StubSteps []string `json:"stub_steps,omitempty"`
}

// reportFn gathers every row's class and every failure (one key) and
// writes the outputs.
type reportFn struct {
	Output  string
	Sources int
	// Stub lists the steps that ran their stand-ins.
	Stub []string
	// Run names the run in metrics.json.
	Run runInfo
	// FilesRun names the run's temporary files (Config.FilesRun).
	FilesRun string

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

func (f *reportFn) ProcessElement(ctx context.Context, _ int, classIter func(*inference.Classification) bool, failIter func(*step.Failure) bool, _ func(*int) bool) error {
	var rows []row
	classes := len(ClassNames)
	var c inference.Classification
	for classIter(&c) {
		r := row{source: c.Source, index: int(c.Index), label: -1, predicts: int32(c.Top[0].Index)}
		if l, ok := c.Carried(inference.CarryLabel); ok {
			if v, err := nd.Int64s(l); err == nil && len(v) == 1 {
				r.label = int32(v[0])
			}
		}
		rows = append(rows, r)
		classes = max(classes, int(r.predicts)+1)
		c = inference.Classification{}
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
	m.Stub, m.StubSteps, m.Run = len(f.Stub) > 0, f.Stub, f.Run
	f.labelled.Inc(ctx, int64(m.Labelled))
	for c := range m.Confusion {
		f.correct.Inc(ctx, int64(m.Confusion[c][c]))
	}
	if err := jobfiles.WriteJSON(ctx, f.FilesRun, jobfiles.Join(f.Output, metricsFile), m); err != nil {
		return err
	}
	if err := jobfiles.WriteFile(ctx, f.FilesRun, jobfiles.Join(f.Output, predictionsFile), func(w io.Writer) error { return writeCSV(w, rows, f.Sources > 1) }); err != nil {
		return err
	}
	img := confusionImage(m.Confusion)
	if err := jobfiles.WriteFile(ctx, f.FilesRun, jobfiles.Join(f.Output, confusionFile), func(w io.Writer) error { return png.Encode(w, img) }); err != nil {
		return err
	}
	return jobfiles.WriteFailures(ctx, f.FilesRun, f.Output, failures)
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

// confusionImage draws the confusion matrix: a row per true class and a
// column per predicted class, named (Fashion-MNIST's classes, numbers
// beyond them), under the axis titles "true class" and "predicted class";
// each cell holds its count and is shaded by its share of the row (green on
// the diagonal, blue elsewhere).
func confusionImage(conf [][]int) *image.RGBA {
	const (
		cell    = 44
		title   = 22 // the title's band
		axis    = 18 // an axis title's band
		colText = 84 // the column names, written upwards
		rowText = 90 // the row names
		pad     = 6
	)
	n := len(conf)
	name := func(c int) string {
		if c < len(ClassNames) {
			return ClassNames[c]
		}
		return strconv.Itoa(c)
	}
	left, top := axis+rowText+pad, title+axis+colText+pad
	img := image.NewRGBA(image.Rect(0, 0, left+n*cell+pad, top+n*cell+pad))
	draw.Draw(img, img.Bounds(), image.NewUniform(color.White), image.Point{}, draw.Src)
	face := basicfont.Face7x13
	text := func(dst draw.Image, x, y int, s string, c color.Color) {
		d := &font.Drawer{Dst: dst, Src: image.NewUniform(c), Face: face, Dot: fixed.P(x, y+4)}
		d.DrawString(s)
	}
	// upwards writes s rotated a quarter turn counter-clockwise, its baseline
	// along x, ending at y.
	upwards := func(x, y int, s string) {
		w := len(s) * 7
		tmp := image.NewRGBA(image.Rect(0, 0, w, 13))
		draw.Draw(tmp, tmp.Bounds(), image.NewUniform(color.White), image.Point{}, draw.Src)
		text(tmp, 0, 6, s, color.Black)
		for ty := 0; ty < 13; ty++ {
			for tx := 0; tx < w; tx++ {
				img.Set(x+ty-6, y-tx, tmp.At(tx, ty))
			}
		}
	}
	text(img, pad, title/2, "Fashion-MNIST confusion matrix: counts, shaded by share of the true class", color.Black)
	text(img, left+n*cell/2-len("predicted class")*7/2, title+axis/2, "predicted class", color.Black)
	upwards(axis/2, top+n*cell/2+len("true class")*7/2, "true class")
	for r := 0; r < n; r++ {
		total := 0
		for _, v := range conf[r] {
			total += v
		}
		text(img, axis+rowText-len(name(r))*7, top+r*cell+cell/2, name(r), color.Black)
		upwards(left+r*cell+cell/2, top-pad, name(r))
		for c := 0; c < n; c++ {
			share := 0.0
			if total > 0 {
				share = float64(conf[r][c]) / float64(total)
			}
			shade := color.RGBA{uint8(255 - 200*share), uint8(255 - 150*share), 255, 255}
			if r == c {
				shade = color.RGBA{uint8(255 - 215*share), uint8(255 - 120*share), uint8(255 - 215*share), 255}
			}
			draw.Draw(img, image.Rect(left+c*cell+1, top+r*cell+1, left+(c+1)*cell, top+(r+1)*cell), image.NewUniform(shade), image.Point{}, draw.Src)
			ink := color.Color(color.Black)
			if share > 0.5 {
				ink = color.White
			}
			v := strconv.Itoa(conf[r][c])
			text(img, left+c*cell+cell/2-len(v)*7/2, top+r*cell+cell/2, v, ink)
		}
	}
	return img
}

// runInfo names the run a metrics.json belongs to.
type runInfo struct {
	// ID is a random name of the run.
	ID string `json:"id"`
	// Started is when the run started (RFC 3339, UTC).
	Started string `json:"started,omitempty"`
	// Inputs are the files the run read: images, labels, the model or
	// the kNN reference set.
	Inputs []string `json:"inputs"`
	// Args is the command line, flags included.
	Args []string `json:"args,omitempty"`
}
