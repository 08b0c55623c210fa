// Package slurmtest gives tests a running one-node Slurm on this host, to start ranks with
// srun. It runs scripts/slurm-local.sh (munged, slurmctld and slurmd from Debian's
// slurm-wlm and munge packages, no systemd, no cgroups, everything on 127.0.0.1) once per
// test binary, and stops it when the binary's tests are done, unless another test binary
// still uses it.
//
// A package whose tests use it calls Run from TestMain, then Up in each test:
//
//	func TestMain(m *testing.M) { os.Exit(slurmtest.Run(m)) }
//
//	func TestHelloUnderSrun(t *testing.T) {
//		srun := slurmtest.Up(t) // skips when Slurm or root is missing
//		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
//		defer cancel()
//		out, err := srun(ctx, "-n", "4", "--mpi=pmi2", "bin/hello").CombinedOutput()
//		...
//	}
//
// Up skips the test, naming the package to install, when srun, slurmctld, slurmd or munged
// is missing, and when the test does not run as root. It fails the test when the cluster
// does not come up (with the script's output and the tail of the daemons' logs). It never
// lets a test pass without Slurm.
//
// Every srun runs under a context: a step whose PMI server crashed (Slurm's step daemon
// does on a KVS value far beyond its vallen_max) leaves srun waiting forever. When the context
// ends, the command gets SIGTERM, which makes srun end its step, and SIGKILL 10 s later.
// srun's environment is the test's minus every SLURM_*, PMI_*, PMIX_* and GOLAUNCH_*
// variable, plus SLURM_CONF naming the generated configuration.
//
// Concurrency: Up and Run may be called from any goroutine; the start-up runs once per
// test binary. Test binaries of several packages share the cluster through the script's
// leases (scripts/slurm-local.sh up/down --lease PID): the last one to finish stops it.
package slurmtest
