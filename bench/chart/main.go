package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/pflag"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return
		}
		fmt.Fprintln(os.Stderr, "chart:", err)
		os.Exit(2)
	}
}

// options are the flags of svg and table.
type options struct {
	series         []string
	out, title     string
	xlabel, ylabel string
	x              string // the JSON field of the x axis
	logy           bool
	data           string // svg: the chart's points as JSON, for chart collect
	source, table  string
	sizes          []string
	digits         int
}

func run(args []string, stdout io.Writer) error {
	if len(args) == 0 {
		return errors.New("usage: chart svg|table|collect|merge|page|device16|select16|ft|timeline [flags] (chart svg --help)")
	}
	cmd := args[0]
	switch cmd {
	case "collect":
		return runCollect(args[1:])
	case "merge":
		return runMerge(args[1:])
	case "page":
		return runPage(args[1:], stdout)
	case "device16":
		return runDevice16(args[1:])
	case "select16":
		return runSelect16(args[1:], stdout)
	case "ft":
		return runFT(args[1:])
	case "timeline":
		return runTimeline(args[1:], stdout)
	case "svg", "table":
	default:
		return fmt.Errorf("unknown subcommand %q: want svg, table, collect, merge, page, device16, select16, ft or timeline", cmd)
	}
	var o options
	fs := pflag.NewFlagSet("chart "+cmd, pflag.ContinueOnError)
	fs.StringArrayVar(&o.series, "series", nil, "NAME=GLOB[@TABLE]:FIELD, repeated: one line or column each")
	fs.StringVar(&o.out, "out", "", "svg: the SVG file to write (.png: a PNG preview)")
	fs.StringVar(&o.data, "json", "", "svg: write the chart's points (the medians) as JSON to this file, for chart collect --chart")
	fs.StringVar(&o.source, "source", "", "svg: the run the points come from, where it is not the run of the section's tables")
	fs.StringVar(&o.table, "table", "", "svg: the title of the section's table that holds the same medians at the sizes both have")
	fs.StringVar(&o.title, "title", "", "svg: chart title")
	fs.StringVar(&o.xlabel, "xlabel", "message size (bytes)", "svg: x axis label")
	fs.StringVar(&o.x, "x", "bytes", "the JSON field of the x axis (log2): bytes, or a count such as ranks")
	fs.StringVar(&o.ylabel, "ylabel", "", "svg: y axis label")
	fs.BoolVar(&o.logy, "logy", false, "svg: logarithmic y axis")
	fs.StringSliceVar(&o.sizes, "sizes", nil, "table: the sizes to list (such as 8,1M,24M; default all)")
	fs.IntVar(&o.digits, "digits", 3, "table: significant digits")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if len(o.series) == 0 {
		return errors.New("at least one --series is needed")
	}
	var ss []series
	for _, spec := range o.series {
		s, err := parseSeries(spec, o.x)
		if err != nil {
			return err
		}
		ss = append(ss, s)
	}
	if cmd == "table" {
		sizes, err := parseSizes(o.sizes)
		if err != nil {
			return err
		}
		_, err = io.WriteString(stdout, markdown(ss, sizes, o.digits))
		return err
	}
	if o.out == "" && o.data == "" {
		return errors.New("svg: --out FILE.svg (FILE.png for a preview) or --json FILE is needed")
	}
	if o.out != "" && !strings.HasSuffix(o.out, ".svg") && !strings.HasSuffix(o.out, ".png") {
		return errors.New("svg: --out FILE.svg is needed (FILE.png for a preview)")
	}
	ch := lineChart(ss, o)
	if o.data != "" {
		b, err := json.MarshalIndent(ch, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(o.data, append(b, '\n'), 0o644); err != nil {
			return err
		}
	}
	if o.out == "" {
		return nil
	}
	return writeChart(ch, o.out)
}

// lineChart is the chart of ss that the svg flags describe.
func lineChart(ss []series, o options) Chart {
	ch := Chart{Title: o.title, XLabel: o.xlabel, YLabel: o.ylabel, X: o.x, LogY: o.logy, Source: o.source, Table: o.table}
	for _, s := range ss {
		cs := ChartSeries{Name: s.Name}
		for _, x := range s.xs() {
			cs.Points = append(cs.Points, Point{X: x, Y: s.Points[x]})
		}
		ch.Series = append(ch.Series, cs)
	}
	return ch
}
