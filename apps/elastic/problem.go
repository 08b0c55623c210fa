package main

import (
	"math/rand/v2"
)

// problem is the synthetic linear regression every rank generates from the seed: n
// samples of dim standard normal features, targets from fixed true weights plus a little
// noise, and the order in which the steps' batches visit the samples. Every rank holds all
// of it, identical bit for bit, so no data moves between ranks.
type problem struct {
	dim, batch int
	x          []float64 // n×dim, row-major
	y          []float64 // n
	order      []int     // a permutation of the samples: step s takes order[(s*batch+j) % n]
}

// noise is the standard deviation of the targets' noise; the least loss is about
// noise²/2.
const noise = 0.1

// newProblem generates the problem of seed: the same at every rank and in every run.
func newProblem(seed uint64, samples, dim, batch int) *problem {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	p := &problem{dim: dim, batch: batch, x: make([]float64, samples*dim), y: make([]float64, samples)}
	truth := make([]float64, dim)
	for j := range truth {
		truth[j] = rng.NormFloat64()
	}
	for i := range samples {
		row := p.x[i*dim : (i+1)*dim]
		var t float64
		for j := range row {
			row[j] = rng.NormFloat64()
			t += truth[j] * row[j]
		}
		p.y[i] = t + noise*rng.NormFloat64()
	}
	p.order = rng.Perm(samples)
	return p
}

// sample returns the index of the j-th sample of step s's batch.
func (p *problem) sample(step, j int) int {
	return p.order[(step*p.batch+j)%len(p.y)]
}

// gradSum adds to g (len dim) the squared error's gradient at w of the samples j0..j1-1
// of step's batch: the sum over them of (<w, x_i> - y_i) x_i.
func (p *problem) gradSum(w, g []float64, step, j0, j1 int) {
	for j := j0; j < j1; j++ {
		i := p.sample(step, j)
		row := p.x[i*p.dim : (i+1)*p.dim]
		r := dot(w, row) - p.y[i]
		for k, v := range row {
			g[k] += r * v
		}
	}
}

// loss returns the mean of (<w, x_i> - y_i)²/2 over every sample.
func (p *problem) loss(w []float64) float64 {
	var s float64
	for i, y := range p.y {
		r := dot(w, p.x[i*p.dim:(i+1)*p.dim]) - y
		s += r * r
	}
	return s / float64(2*len(p.y))
}

func dot(a, b []float64) float64 {
	var s float64
	for i, v := range a {
		s += v * b[i]
	}
	return s
}

// part returns the range [lo, hi) of the i-th of n contiguous parts of 0..total-1: the
// batch's samples a rank takes, or the coordinates whose momentum it owns.
func part(total, n, i int) (lo, hi int) {
	return i * total / n, (i + 1) * total / n
}

// sgd holds the optimizer's settings: plain SGD with momentum.
type sgd struct {
	lr, momentum float64
}

// update applies one step to the coordinates lo..hi-1: m = momentum·m + g[lo:hi], then
// w[lo:hi] -= lr·m. m is the momentum of those coordinates alone; g is the whole
// gradient, already divided by the batch.
func (o sgd) update(w, m, g []float64, lo int) {
	for k := range m {
		m[k] = o.momentum*m[k] + g[lo+k]
		w[lo+k] -= o.lr * m[k]
	}
}
