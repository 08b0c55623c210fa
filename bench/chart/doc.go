// Command chart turns the benchmark programs' outputs into the comparison's SVG charts
// and Markdown tables: one line (or column) per system, the median over repeated runs.
//
//	go run ./bench/chart svg --out docs/charts/allreduce_p2_latency.svg \
//	    --title "Allreduce, 2 ranks" --ylabel "latency (us)" --logy \
//	    --series 'gorma=results/compare/ar_gorma_p2_*.json:avg_us' \
//	    --series 'Open MPI=results/compare/ar_ompi_p2_*.json:avg_us'
//	go run ./bench/chart table --sizes 8,1M,16M,24M,64M --series ... --series ...
//
// A series is NAME=GLOB[@TABLE]:FIELD. GLOB names one or more files (repetitions of one
// run); each holds either a JSON document of a benchmark program (apps/allreducebench,
// apps/pingpong, apps/rmabench and the C twins that write the same JSON) or an OSU-style
// text table. In JSON, the points are the objects that have a numeric "bytes" and a
// numeric FIELD (avg_us, busbw_GBps, latency_us, MB_per_s, median_us, ...), taken from
// the array under the key TABLE, or from the "rows" of the table whose "name" is TABLE
// (rmabench), or without @TABLE from the first array that has such objects. In a text
// table FIELD is a column number (1 is the size): the rows are the lines that start with
// a number, after the first comment line containing TABLE (all of them without @TABLE),
// up to the next "# " comment. For every size, the series' value is the median over
// the files that have it.
//
// svg draws the series against the size in bytes (a log2 axis; --logy for a log10 value
// axis) with gonum.org/v1/plot, fonts not embedded (the viewer's sans-serif). table
// prints a Markdown table: a row per size of --sizes (all sizes without it), a column per
// series and the ratio of the first series to each other one ("-" where one is missing).
//
// It is a single-goroutine command-line tool: it reads its inputs once and writes one
// output.
package main
