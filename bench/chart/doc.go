// Command chart turns the benchmark programs' outputs into the comparison's SVG charts,
// Markdown tables, the report docs/benchmarks.json and the page docs/benchmarks.md
// rendered from it. scripts/compare-all.sh (make compare) runs the first four subcommands.
//
//	chart svg --out docs/charts/allreduce_p2_latency.svg --title "Allreduce, 2 ranks" \
//	    --ylabel "latency (us)" --logy \
//	    --series 'gorma=results/compare/ar_gorma_p2_*.json:avg_us' \
//	    --series 'Open MPI=results/compare/ar_ompi_p2_*.json:avg_us'
//	chart table --sizes 8,1M,16M,24M,64M --series ... --series ...
//	chart collect --dir results/compare --out docs/benchmarks.json --commit C --cpu ... --start ...
//	chart merge --in docs/benchmarks.json --section results/compare/launchers.json [--commit C]
//	chart page --in docs/benchmarks.json --out docs/benchmarks.md
//	chart device16 --in results/device16 --out docs/device16.json
//	chart ft --in results/ftbench --out docs/ft.json
//	chart timeline [--from US] [--to US] [--width PX] [--title S] job.json > job.svg
//
// A series is NAME=GLOB[@TABLE]:FIELD. GLOB names one or more files (repetitions of one
// run), each a program's JSON document (apps/allreducebench, apps/pingpong, apps/rmabench,
// apps/sockbench, compare-scale.sh's scale_chart_*.json and the C twins) or an OSU-style text
// table. In JSON the points are the objects with a numeric "bytes" (or the field --x
// names, such as ranks) and FIELD, taken from the array under the key TABLE, from the
// "rows" of the table whose "name" is TABLE, or without @TABLE from the first such array.
// In a text table FIELD is a column number (1 is the size), read after the first "# "
// line containing TABLE up to the next one. A size's value is the median over the files.
// svg draws the series on a log2 size axis (a log2 count axis with --x); table prints a
// row per size, a column per series and the ratio of the first series to each other one.
//
// With --json FILE, svg writes the chart's points (the medians) instead of, or beside,
// the SVG; --source names the run when it is not the run of the section's tables, and
// --table the table whose medians the points repeat.
//
// collect parses the step outputs in --dir into a Report. The outputs are
// startup_p*.txt, p2p.txt, rma.txt and allreduce.txt: their Markdown tables, the startup
// lines and the lines "load average at the start: ..." and "... at the end: ...". A
// Report holds the machine, the run, and a section per comparison. Each section has a
// title, an introduction, the load at the start and the end of its step, tables
// (columns, rows with values, ratios and targets), raw samples and charts. --section
// adds a section given as JSON (with its "load"). --chart ID:FILE:ALT adds the chart
// whose points svg --json wrote to --dir's chart_NAME.json.
//
// merge puts each --section FILE in place of the report's section with the same id (or
// after the others), and keeps the rest of the report as it was: one comparison measured
// again, such as scripts/compare-launchers.sh's, replaces its section alone. The report
// names the commit it measured (collect --commit), and a merged section its own (its
// "commit", else merge --commit).
//
// page renders the Report through the embedded page.md.tmpl and draws every chart from
// it into the directory of --out. A stored chart from its points, the others (startup,
// launchers, Allreduce latency, sockets, halo, overlap, scale) from their section's
// tables and samples, so that a chart and its table show the same medians. A stored
// chart that names a table and disagrees with it is an error. Where MPICH ran more ranks
// than the cores, its cells give no ratio and a target against them is not judged; a
// footnote says why. A section without a recorded load says "not recorded". The page
// opens with a summary: per machine and family of figures, where gorma leads and trails
// the best peer, and the commit each run measured (design.md). Every ratio prints with
// two decimals and an x (0.19x). The package's tests check that the committed page and
// charts are exactly that rendering.
//
// device16, ft and the sections of the page that come from their own JSON documents
// (device16.json, startup16.json, ft.json, observe.json, observe2.json, abi.json), and
// timeline, which draws a job's timeline (golaunch --trace) as an SVG, are described in
// design.md.
//
// It is a single-goroutine command-line tool: it reads its inputs once and writes one
// output.
package main
