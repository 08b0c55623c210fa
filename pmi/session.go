package pmi

import (
	"context"
	"errors"
)

// Session is a rank's connection to its process manager: golaunch's agent (*Client) or a
// foreign PMI server (*Foreign, PMI-1 or PMI-2). Safe for concurrent use; requests are
// serialized.
type Session interface {
	Rank() int
	Size() int
	// Put publishes value (any bytes) under key for this rank; others see it with Get
	// after the next Fence. A Foreign session encodes it (unpadded base64url) and splits
	// it over several PMI keys when it is longer than the server's vallen_max.
	Put(ctx context.Context, key string, value []byte) error
	// Fence is the job-wide barrier that makes every earlier Put visible (PMI-1
	// barrier_in/out, PMI-2 kvs-fence).
	Fence(ctx context.Context) error
	// Get returns what rank put under key before the last Fence; errors.Is(err,
	// ErrNotFound) when absent.
	Get(ctx context.Context, rank int, key string) ([]byte, error)
	// Abort asks the process manager to end the job with code (it does not wait for
	// the job's end).
	Abort(code int, msg string) error
	// Finalize says this rank is done (PMI finalize); Close after it.
	Finalize(ctx context.Context) error
	Close() error
}

// ErrNoPMI means the environment names no PMI server (neither PMI_FD nor PMI_PORT).
var ErrNoPMI = errors.New("pmi: no PMI server in the environment (PMI_FD or PMI_PORT)")

// ErrRefused is a request that a foreign PMI server answered with rc != 0, or a spawn
// that golaunch's agent refused (Client.Spawn); the error carries the refusal's text.
var ErrRefused = errors.New("pmi: refused by the PMI server")
