package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gorma-hpc/gorma/collectives"
	"github.com/gorma-hpc/gorma/runtime"
)

func main() {
	if err := run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "appprog:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	w, err := runtime.Init(ctx)
	if err != nil {
		return err
	}
	app, ok := w.AppNum()
	if !ok {
		return fmt.Errorf("rank %d: AppNum not known", w.Rank())
	}
	fmt.Printf("app %d %d %d %s %s GL_APP=%s %s\n", w.Rank(), w.Size(), app, filepath.Base(os.Args[0]), w.Host(),
		os.Getenv("GL_APP"), strings.Join(os.Args[1:], " "))
	sum := make([]int64, 2)
	if err := collectives.Allreduce(ctx, w, []int64{int64(app), 1}, sum, collectives.Sum[int64]()); err != nil {
		return fmt.Errorf("rank %d: allreduce: %w", w.Rank(), err)
	}
	fmt.Printf("sum %d %d %d\n", w.Rank(), sum[0], sum[1])
	fctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	return w.Finalize(fctx)
}
