// Command golaunch runs a gorma rank program as a parallel job: N copies on this host, or
// spread over the hosts of an agent cluster.
//
//	golaunch -n 4 ./hello
//	golaunch -np 8 -x OMP_NUM_THREADS=1 --timeout 10m ./solver in.dat
//	golaunch -n 1 ./server : -n 4 ./worker   # MPMD: one job, the server is rank 0
//	golaunch agent --bind 10.0.0.2:7946 --join 10.0.0.1:7946 --slots 8 --keyfile /etc/gorma.key
//	golaunch -n 16 --join 10.0.0.1:7946 --keyfile /etc/gorma.key ./prog
//
// `golaunch --help` lists the flags; package launcher documents the behaviour (the rank
// table, the agents, failure handling and exit codes). The command itself only calls
// launcher.Main.
package main
