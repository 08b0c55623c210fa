// Package testbudget scales the time budgets of gorma's tests to the machine that runs
// them. A test that waits for something (a completion, a job's exit, a rank's answer)
// waits up to a budget. [Scale] stretches that budget by a slack factor, so that a loaded
// machine meets it, and the test's failure message says what had not happened within it.
//
//	ctx, cancel := context.WithTimeout(ctx, testbudget.Scale(30*time.Second))
//	args := []string{"--timeout", testbudget.Scale(60 * time.Second).String(), prog}
//	ctx, cancel := testbudget.Context(ctx, 30*time.Second, "the job's exit")
//
// [Slack] is the larger of two factors. GORMA_TEST_SLACK sets the first, a number of at
// least 1 (default 1): `GORMA_TEST_SLACK=4 go test ./...`. The second follows the
// machine: the 1-minute load average over the CPUs this process may run on, when that
// exceeds 1, at most [MaxAutoSlack]. So a 2-core machine at load 30 gets a factor of 15
// by itself. Slack reads both at each call. The package imports only the standard
// library, so every layer's tests may use it.
//
// [SkipEngine] is the skip of a test whose real engine (Slurm, Hydra, Open MPI, network
// namespaces, a second user) is missing: a failure instead under
// GORMA_REQUIRE_ENGINES=1, which CI sets.
//
// Concurrency: every function may be called from any goroutine.
package testbudget
