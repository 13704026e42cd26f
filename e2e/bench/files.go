package bench

import (
	"io"
	"os"
	"path/filepath"
	"strings"
)

// CostChartName is the cost curve chart's file name beside the markdown
// file out: BENCHMARKS.md gets BENCHMARKS-cost.svg.
func CostChartName(out string) string {
	base := filepath.Base(out)
	return strings.TrimSuffix(base, filepath.Ext(base)) + "-cost.svg"
}

// WriteFiles writes the report's markdown to out and, when the run has a
// cost curve, its chart beside it (CostChartName), which the markdown
// embeds by that name. It returns the paths written.
func (r *Report) WriteFiles(out string) ([]string, error) {
	var written []string
	r.CostChart = ""
	if svg := r.CostSVG(); svg != nil {
		path := filepath.Join(filepath.Dir(out), CostChartName(out))
		if err := writeAtomic(path, func(w io.Writer) error {
			_, err := w.Write(svg)
			return err
		}); err != nil {
			return nil, err
		}
		r.CostChart = filepath.Base(path)
		written = append(written, path)
	}
	if err := writeAtomic(out, r.WriteMarkdown); err != nil {
		return written, err
	}
	return append(written, out), nil
}

// writeAtomic writes beside path and renames into place, so an interrupted
// run never leaves half a file. A missing folder is made: a run takes
// minutes, and its figures must not be lost to a typo in --out.
func writeAtomic(path string, write func(io.Writer) error) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".bench-*"+filepath.Ext(path))
	if err != nil {
		return err
	}
	if err := write(tmp); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return nil
}
