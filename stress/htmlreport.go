package main

import (
	"fmt"
	"html"
	"io"
	"math"
	"os"
	"strings"
	"time"
)

// -report FILE: one self-contained HTML page (inline SVG and CSS, nothing
// fetched) with, for every run measured in the harness's own process, its
// latency and throughput second by second, the measured window and the
// faults injected; runs of a process of their own (peers, drivers, plain
// programs) report one window through the bench protocol, so they have a
// row in the table and no chart.

// reportMeta is what the page says of the whole command.
type reportMeta struct {
	args    []string
	server  string
	seed    uint64
	started time.Time
}

// writeReport writes the page to path.
func writeReport(path string, meta reportMeta, results []*result) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := renderReport(f, meta, results); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

const reportCSS = `body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;max-width:1100px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 4px}
.meta{color:#555;margin:0 0 16px}code{font-size:12px}
table{border-collapse:collapse;font-variant-numeric:tabular-nums;font-size:12px}
th,td{padding:3px 8px;border-bottom:1px solid #ddd;text-align:right;white-space:nowrap}th{background:#f4f4f4}
td:first-child,th:first-child,td:nth-child(2),th:nth-child(2){text-align:left}
.bad{color:#b00020;font-weight:600}.note{color:#555;font-size:13px;margin:4px 0}
svg{display:block;margin:6px 0}svg text{font:11px system-ui,sans-serif;fill:#333}
.key span{display:inline-block;margin-right:14px;font-size:13px}
.key i{display:inline-block;width:18px;height:3px;vertical-align:middle;margin-right:5px}`

// chart colours.
const (
	colP50    = "#1f77b4"
	colP99    = "#ff7f0e"
	colMax    = "#7f7f7f"
	colGrants = "#2ca02c"
	colErrors = "#d62728"
	colFault  = "#d62728"
	colWindow = "#eef4fb"
)

func renderReport(w io.Writer, meta reportMeta, results []*result) error {
	var b strings.Builder
	b.WriteString("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>turnstile stress report</title>\n<style>")
	b.WriteString(reportCSS)
	b.WriteString("</style></head><body>\n<h1>turnstile stress report</h1>\n")
	fmt.Fprintf(&b, "<p class=\"meta\">%s · %s · seed %d<br><code>go run ./stress %s</code></p>\n",
		html.EscapeString(meta.started.UTC().Format("2006-01-02 15:04:05 UTC")), html.EscapeString(meta.server), meta.seed,
		html.EscapeString(strings.Join(meta.args, " ")))

	b.WriteString("<table><tr><th>impl</th><th>workload</th><th>workers</th><th>offered/s</th><th>cycles/s</th>" +
		"<th>p50 ms</th><th>p99 ms</th><th>p99.9 ms</th><th>max ms</th><th>req/cycle</th><th>client µs/cycle</th>" +
		"<th>errors</th><th>violations</th><th>orphans</th><th>faults</th></tr>\n")
	for _, r := range results {
		if r.Skipped != "" {
			continue
		}
		offered := "closed"
		if r.OfferedPerS > 0 {
			offered = fmt.Sprintf("%.0f", r.OfferedPerS)
		}
		bad := func(n int64) string {
			if n > 0 {
				return fmt.Sprintf("<td class=\"bad\">%d</td>", n)
			}
			return fmt.Sprintf("<td>%d</td>", n)
		}
		fmt.Fprintf(&b, "<tr><td>%s</td><td>%s</td><td>%d</td><td>%s</td><td>%.0f</td><td>%.2f</td><td>%.2f</td><td>%.2f</td><td>%.2f</td><td>%s</td><td>%s</td>%s%s%s<td>%d</td></tr>\n",
			html.EscapeString(r.Impl), html.EscapeString(r.Workload), r.Workers, offered, r.CyclesPerS,
			r.AcquireP50Ms, r.AcquireP99Ms, r.AcquireP999Ms, r.AcquireMaxMs, optF(r.ServerRequestsPerCycle), optF0(r.ClientCPUUsPerCycle),
			bad(r.Errors), bad(r.Violations), bad(int64(r.Orphans)), r.FaultsInjected)
	}
	b.WriteString("</table>\n")
	b.WriteString("<p class=\"note\">Latency is each acquisition's, from its call (closed loop) or from its intended start (open loop) to its grant. " +
		"Charts: one point per second of the run, from the workers' start; the shaded band is the measured window; red bands are injected faults.</p>\n")

	for _, r := range results {
		if r.Skipped != "" {
			continue
		}
		title := fmt.Sprintf("%s · %s · %d workers", r.Impl, r.Workload, r.Workers)
		if r.OfferedPerS > 0 {
			title += fmt.Sprintf(" · %.0f acquisitions/s offered", r.OfferedPerS)
		}
		if r.Faults != "none" && r.Faults != "" {
			title += " · faults " + r.Faults
		}
		fmt.Fprintf(&b, "<h2>%s</h2>\n", html.EscapeString(title))
		if r.tl == nil {
			b.WriteString("<p class=\"note\">Run in a process of its own: it reports one measured window (the table's row), not seconds.</p>\n")
			continue
		}
		pts := r.tl.points()
		faults, from, to, hasWindow := r.tl.marks()
		if len(pts) == 0 {
			b.WriteString("<p class=\"note\">Nothing was recorded.</p>\n")
			continue
		}
		ch := chartFrame{secs: len(pts), faults: faults, from: from, to: to, window: hasWindow}
		b.WriteString("<div class=\"key\"><span><i style=\"background:" + colP50 + "\"></i>p50</span><span><i style=\"background:" + colP99 +
			"\"></i>p99</span><span><i style=\"background:" + colMax + "\"></i>max</span> latency per second, ms (log scale)</div>\n")
		ch.latency(&b, pts)
		b.WriteString("<div class=\"key\"><span><i style=\"background:" + colGrants + "\"></i>grants</span><span><i style=\"background:" + colErrors +
			"\"></i>failed acquisitions</span> per second</div>\n")
		ch.throughput(&b, pts)
		var notes []string
		if hasWindow {
			notes = append(notes, fmt.Sprintf("measured window %.1f–%.1f s", from.Seconds(), to.Seconds()))
		}
		if len(faults) > 0 {
			var fs []string
			for _, f := range faults {
				fs = append(fs, fmt.Sprintf("%s %.1f–%.1f s", html.EscapeString(f.Kind), f.From.Seconds(), f.To.Seconds()))
			}
			notes = append(notes, fmt.Sprintf("%d faults: %s", len(faults), strings.Join(fs, ", ")))
		}
		if len(notes) > 0 {
			fmt.Fprintf(&b, "<p class=\"note\">%s</p>\n", strings.Join(notes, " · "))
		}
	}
	b.WriteString("</body></html>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// chartFrame is what the charts of one run share: the x axis (seconds),
// the window and the faults.
type chartFrame struct {
	secs     int
	faults   []faultMark
	from, to time.Duration
	window   bool
}

// chart geometry, in SVG units.
const (
	chartW    = 1000
	chartLeft = 64
	chartRt   = 16
	chartTop  = 14
)

func (c chartFrame) x(sec float64) float64 {
	return chartLeft + sec/float64(c.secs)*(chartW-chartLeft-chartRt)
}

// backdrop draws the window band, the fault bands and the x axis of a
// chart whose plot area is top..bottom.
func (c chartFrame) backdrop(b *strings.Builder, top, bottom float64) {
	if c.window {
		x0, x1 := c.x(c.from.Seconds()), c.x(c.to.Seconds())
		fmt.Fprintf(b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"/>\n", x0, top, max(x1-x0, 1), bottom-top, colWindow)
	}
	for _, f := range c.faults {
		x0, x1 := c.x(f.From.Seconds()), c.x(f.To.Seconds())
		fmt.Fprintf(b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\" fill-opacity=\"0.18\" stroke=\"%s\" stroke-opacity=\"0.6\"/>\n",
			x0, top, max(x1-x0, 2), bottom-top, colFault, colFault)
		fmt.Fprintf(b, "<text x=\"%.1f\" y=\"%.1f\" fill=\"%s\">%s</text>\n", x0+3, top+11, colFault, html.EscapeString(f.Kind))
	}
	fmt.Fprintf(b, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#888\"/>\n", chartLeft, bottom, chartW-chartRt, bottom)
	step := tickStep(c.secs)
	for s := 0; s <= c.secs; s += step {
		fmt.Fprintf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#888\"/><text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%d s</text>\n",
			c.x(float64(s)), bottom, c.x(float64(s)), bottom+4, c.x(float64(s)), bottom+16, s)
	}
}

// tickStep is a step between x labels that gives at most about 15.
func tickStep(secs int) int {
	for _, s := range []int{1, 2, 5, 10, 15, 30, 60, 120, 300, 600} {
		if secs/s <= 15 {
			return s
		}
	}
	return 1200
}

// latency draws p50, p99 and max per second on a log scale.
func (c chartFrame) latency(b *strings.Builder, pts []point) {
	const h, bottom = 260.0, 236.0
	lo, hi := math.Inf(1), 0.0
	for _, p := range pts {
		if p.HasLatency {
			lo = min(lo, max(p.P50Ms, 0.001))
			hi = max(hi, p.MaxMs)
		}
	}
	fmt.Fprintf(b, "<svg viewBox=\"0 0 %d %.0f\" width=\"100%%\" role=\"img\" aria-label=\"latency per second\">\n", chartW, h)
	c.backdrop(b, chartTop, bottom)
	if hi == 0 {
		b.WriteString("</svg>\n")
		return
	}
	d0, d1 := math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
	if d1 <= d0 {
		d1 = d0 + 1
	}
	y := func(ms float64) float64 {
		v := (math.Log10(max(ms, math.Pow(10, d0))) - d0) / (d1 - d0)
		return bottom - v*(bottom-chartTop)
	}
	for d := d0; d <= d1; d++ {
		yy := y(math.Pow(10, d))
		fmt.Fprintf(b, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#ddd\"/><text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n",
			chartLeft, yy, chartW-chartRt, yy, chartLeft-6, yy+4, msLabel(math.Pow(10, d)))
	}
	for _, s := range []struct {
		col  string
		dash string
		v    func(point) float64
	}{
		{colMax, "3,3", func(p point) float64 { return p.MaxMs }},
		{colP99, "", func(p point) float64 { return p.P99Ms }},
		{colP50, "", func(p point) float64 { return p.P50Ms }},
	} {
		var path strings.Builder
		pen := false
		for _, p := range pts {
			if !p.HasLatency {
				pen = false // a second without grants breaks the line
				continue
			}
			op := "L"
			if !pen {
				op = "M"
			}
			fmt.Fprintf(&path, "%s%.1f %.1f ", op, c.x(float64(p.Sec)+0.5), y(s.v(p)))
			pen = true
		}
		dash := ""
		if s.dash != "" {
			dash = fmt.Sprintf(" stroke-dasharray=\"%s\"", s.dash)
		}
		fmt.Fprintf(b, "<path d=\"%s\" fill=\"none\" stroke=\"%s\" stroke-width=\"1.8\"%s/>\n", strings.TrimSpace(path.String()), s.col, dash)
	}
	b.WriteString("</svg>\n")
}

// throughput draws grants and failed acquisitions per second as bars.
func (c chartFrame) throughput(b *strings.Builder, pts []point) {
	const h, bottom = 170.0, 146.0
	var top int64
	for _, p := range pts {
		top = max(top, p.Grants+p.Errors)
	}
	fmt.Fprintf(b, "<svg viewBox=\"0 0 %d %.0f\" width=\"100%%\" role=\"img\" aria-label=\"grants per second\">\n", chartW, h)
	c.backdrop(b, chartTop, bottom)
	if top == 0 {
		b.WriteString("</svg>\n")
		return
	}
	scale := niceCeil(float64(top))
	y := func(v float64) float64 { return bottom - v/scale*(bottom-chartTop) }
	for i := 0; i <= 4; i++ {
		v := scale * float64(i) / 4
		fmt.Fprintf(b, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#ddd\"/><text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n",
			chartLeft, y(v), chartW-chartRt, y(v), chartLeft-6, y(v)+4, countLabel(v))
	}
	bw := max(c.x(1)-c.x(0)-1, 1)
	for _, p := range pts {
		x := c.x(float64(p.Sec)) + 0.5
		if p.Grants > 0 {
			fmt.Fprintf(b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"/>\n", x, y(float64(p.Grants)), bw, bottom-y(float64(p.Grants)), colGrants)
		}
		if p.Errors > 0 {
			y0 := y(float64(p.Grants))
			y1 := y(float64(p.Grants + p.Errors))
			fmt.Fprintf(b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"/>\n", x, y1, bw, max(y0-y1, 1), colErrors)
		}
	}
	b.WriteString("</svg>\n")
}

// niceCeil is the least of 1, 2, 2.5, 5 × 10^k not below v.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

func msLabel(ms float64) string {
	switch {
	case ms >= 1000:
		return fmt.Sprintf("%g s", ms/1000)
	case ms >= 1:
		return fmt.Sprintf("%g ms", ms)
	}
	return fmt.Sprintf("%g µs", ms*1000)
}

func countLabel(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%gM", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%gk", v/1e3)
	}
	return fmt.Sprintf("%g", v)
}
