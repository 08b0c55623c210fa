package collectives

import (
	"fmt"

	"github.com/gorma-hpc/gorma/collectives/internal/hostgroup"
	"github.com/gorma-hpc/gorma/runtime"
)

// allreduceWorldSHM runs allreduceSHM over the whole World, which must be on one host.
func allreduceWorldSHM[T runtime.Elem](c *call, src, recv []T, op Op[T]) error {
	l := localOf(c.s)
	if !l.loc.oneHost {
		return fmt.Errorf("%w: %s=shm needs every rank on this host, reached through shm (%d hosts; ranks %v here)",
			runtime.ErrConfig, EnvAllreduce, l.loc.hosts, l.host)
	}
	if l.teamed() {
		return allreduceTeams(c, l, src, recv, op)
	}
	if l.world == nil {
		l.world = hostgroup.New(l.host, l.hostIdx)
	}
	if err := l.world.Prepare(c, len(recv)*elemSize[T]()); err != nil {
		return err
	}
	if err := allreduceSHM(c, l.world, src, recv, op, -1); err != nil {
		return err
	}
	return l.world.ReleaseBig(c)
}

// allreduceHier is the hierarchical Allreduce for jobs spanning hosts. The ranks of each
// host reduce their vectors to the host's leader (its lowest rank) through shared memory
// (allreduceSHM with a root). The leaders run a point-to-point Allreduce among themselves
// (the algorithm selectAllreduce picks for their number, on a sub-group addressed by
// World rank). Each leader broadcasts the result to its host through shared memory
// (shmBcast). A host whose ranks run in teams (teamed: more than hostgroup.FlatMax()
// ranks, or several cache domains) does both on-host steps in teams (reduceTeams,
// bcastTeams): its leader is the first team's head. Only the leaders' step crosses hosts.
// Under ScratchFresh each host's big buffers are acquired before the on-host reduce and
// released after the broadcast. Rank order holds for non-commutative operators when each
// host's ranks are consecutive (the selection falls back otherwise).
func allreduceHier[T runtime.Elem](c *call, src, recv []T, op Op[T]) error {
	l := localOf(c.s)
	if l.unmapped {
		// Every rank sees it (localOf), so every rank fails alike instead of waiting.
		return fmt.Errorf("%w: %s=hier needs the ranks of each host to reach each other through shm (hosts %d; ranks %v here)",
			runtime.ErrConfig, EnvAllreduce, l.loc.hosts, l.host)
	}
	if !l.loc.contiguous && !op.commutative {
		return fmt.Errorf("%w: hierarchical allreduce of a non-commutative operator needs each host's ranks consecutive",
			runtime.ErrInvalid)
	}
	local := len(l.host) > 1
	teams := local && l.teamed()
	switch {
	case teams:
		if err := reduceTeams(c, l, src, recv, op, 0); err != nil {
			return err
		}
	case local:
		if l.onHost == nil {
			l.onHost = hostgroup.New(l.host, l.hostIdx)
		}
		if err := l.onHost.Prepare(c, len(recv)*elemSize[T]()); err != nil {
			return err
		}
		if err := allreduceSHM(c, l.onHost, src, recv, op, 0); err != nil {
			return err
		}
	default:
		copy(recv, src)
	}
	if l.leaderS != nil {
		sc := c.sub(l.leaderS)
		// The leaders are on a host each.
		a := selectAllreduce(algoAuto, len(recv)*elemSize[T](), len(recv), l.leaderS.size, op.commutative,
			locality{hosts: l.leaderS.size})
		if err := allreduceP2P(sc, a, recv, op); err != nil {
			return fmt.Errorf("among host leaders: %w", err)
		}
	}
	switch {
	case teams:
		return bcastTeams(c, l, recv)
	case local:
		if err := shmBcast(c, l.onHost, recv, 0); err != nil {
			return err
		}
		return l.onHost.ReleaseBig(c)
	}
	return nil
}
