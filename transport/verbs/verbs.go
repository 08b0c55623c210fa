package verbs

import (
	"context"
	"time"
)

// Provider is a transport implementation. Providers register themselves with Register
// from their init function.
type Provider interface {
	// Name is the provider's registry name, such as "shm" or "tcp".
	Name() string
	// Caps reports what the provider can do.
	Caps() Caps
	// Open opens a device. cfg has had its defaults applied.
	Open(cfg Config) (Device, error)
}

// WaitMode selects how CQ.Wait waits for a completion.
type WaitMode int

const (
	// WaitHybrid spins for Config.Spin and then blocks (on a futex or channel). Default.
	// A provider whose completions come from its own goroutines in this process (tcp)
	// blocks at once instead, as spinning would take the core those goroutines need,
	// unless the waiter reads the connection itself (tcp's leader). It then tries the
	// socket without blocking for Config.Spin before it blocks. The reader goroutine of
	// such a connection, which serves the peer's requests, also tries its socket for
	// Config.Spin before it parks, while no other goroutine of the process runs.
	WaitHybrid WaitMode = iota
	// WaitSpin only spins (yielding the processor between polls). Lowest latency when every
	// rank has a core of its own.
	WaitSpin
	// WaitBlock blocks at once. Best when ranks outnumber cores.
	WaitBlock
)

// String returns the mode's name as accepted by ParseWaitMode.
func (m WaitMode) String() string {
	switch m {
	case WaitHybrid:
		return "hybrid"
	case WaitSpin:
		return "spin"
	case WaitBlock:
		return "block"
	}
	return "WaitMode(?)"
}

// ParseWaitMode parses "hybrid", "spin" or "block".
func ParseWaitMode(s string) (WaitMode, error) {
	switch s {
	case "hybrid", "":
		return WaitHybrid, nil
	case "spin":
		return WaitSpin, nil
	case "block":
		return WaitBlock, nil
	}
	return 0, &Error{Op: "parse wait mode", Err: ErrInvalid, Detail: "want hybrid, spin or block, got " + quote(s)}
}

// Default configuration values.
const (
	DefaultArenaSize = 1 << 30   // sparse bytes reserved per device arena
	DefaultHighWater = 256 << 20 // free, faulted-in arena bytes kept before trimming
	DefaultMaxMRs    = 16384     // key table slots per arena
	DefaultSpin      = 50 * time.Microsecond
)

// Config configures a device: the settings every provider reads, and Provider for a
// provider's own. The zero value is valid for providers that need no options (shm).
type Config struct {
	// ArenaSize is the sparse size of the device's pre-registered arena in bytes; memory is
	// committed only when touched. Default DefaultArenaSize.
	ArenaSize int64
	// HighWater is how many bytes of freed, faulted-in arena memory are kept for reuse
	// before the arena returns memory to the kernel. Default DefaultHighWater; negative
	// means never trim.
	HighWater int64
	// MaxMRs bounds the number of live memory regions. Default DefaultMaxMRs.
	MaxMRs int
	// Wait selects how CQ.Wait waits. Default WaitHybrid.
	Wait WaitMode
	// Spin is the spin budget of WaitHybrid. Default DefaultSpin.
	Spin time.Duration
	// Name labels the device in errors and diagnostics (for example "rank 3").
	Name string
	// OnRemoteAtomic, if set, is called after each successful remote atomic that this
	// device served as the target, with the key of the MR and the offset of the word,
	// by providers whose target side runs in this process (tcp: the connection's reader
	// goroutine, after the answer is queued). It tells the process that a peer changed
	// one of its words, so that a goroutine asleep waiting for that word can be woken.
	// It must be quick and must not block or call the device. Providers whose remote
	// atomics run on the initiator's CPU (shm) never call it: there the initiator itself
	// must wake whoever waits at the target.
	OnRemoteAtomic func(key, offset uint64)
	// Provider holds provider-specific options; each provider documents the type it
	// accepts (tcp: tcp.Options), and nil gives its defaults. A value of the wrong type
	// fails Open with a *Error wrapping ErrInvalid.
	Provider any
}

// WithDefaults returns cfg with every zero field replaced by its default.
func (cfg Config) WithDefaults() Config {
	if cfg.ArenaSize == 0 {
		cfg.ArenaSize = DefaultArenaSize
	}
	if cfg.HighWater == 0 {
		cfg.HighWater = DefaultHighWater
	}
	if cfg.MaxMRs == 0 {
		cfg.MaxMRs = DefaultMaxMRs
	}
	if cfg.Spin == 0 {
		cfg.Spin = DefaultSpin
	}
	return cfg
}

// Device is an opened provider instance. It owns the pre-registered arena from which
// PD.AllocMR carves memory regions.
type Device interface {
	// Provider returns the provider's name.
	Provider() string
	// Caps reports what this device can do.
	Caps() Caps
	// AllocPD allocates a protection domain.
	AllocPD() (PD, error)
	// CreateCQ creates a completion queue holding up to depth completions. Size it for
	// the sum of the MaxSendWR and MaxRecvWR of the QPs completing on it. What a
	// provider does with more is its own, so portable code never relies on either: tcp
	// drops them and every later Poll reports ErrCQOverrun, as libibverbs' CQ overrun
	// is fatal; shm keeps them in an overflow list.
	CreateCQ(depth int) (CQ, error)
	// Stats returns the arena's counters.
	Stats() ArenaStats
	// Close destroys the device and everything created from it: outstanding work completes
	// with WRFlushErr, connected peers see their QPs fail, and the arena is released.
	Close() error
}

// PD is a protection domain.
type PD interface {
	// AllocMR allocates length bytes of pre-registered arena memory as a memory region.
	// The memory is zeroed on first use and may hold old data on reuse.
	AllocMR(length int, access Access) (MR, error)
	// RegMR registers buf (ordinary Go memory) as a memory region. The MR keeps buf alive
	// until Dereg. Providers that cannot offer every right on such memory say so in Caps and
	// return ErrUnsupported.
	RegMR(buf []byte, access Access) (MR, error)
	// CreateQP creates a reliable-connected queue pair in state Reset.
	CreateQP(attr QPAttr) (QP, error)
	// Close deregisters the PD's MRs and destroys its QPs.
	Close() error
}

// MR is a registered memory region.
type MR interface {
	// LKey names the MR in local work requests (SendWR.LKey, RecvWR.LKey).
	LKey() uint64
	// RKey names the MR in remote work requests (RemoteAddr.RKey).
	RKey() uint64
	// Len is the region's length in bytes.
	Len() int
	// Access is the region's access rights.
	Access() Access
	// Bytes is the region's memory. For arena MRs it aliases the shared arena.
	Bytes() []byte
	// Dereg deregisters the region. Afterwards any access with its keys fails with
	// RemAccessErr (remote) or LocProtErr (local), even after the bytes are reused.
	Dereg() error
}

// QPAttr configures a queue pair.
type QPAttr struct {
	SendCQ    CQ  // completions of send work requests
	RecvCQ    CQ  // completions of receives (may equal SendCQ)
	MaxSendWR int // outstanding send work requests; default 128
	MaxRecvWR int // posted receives; default 128
}

// Default queue depths.
const (
	DefaultMaxSendWR = 128
	DefaultMaxRecvWR = 128
)

// QP is a reliable-connected queue pair.
type QP interface {
	// Num is the queue pair number, unique within its device.
	Num() uint32
	// State is the QP's current state.
	State() QPState
	// Endpoint returns the opaque bytes a peer passes to its ToRTR to connect to this QP.
	// Valid from Init on.
	Endpoint() []byte
	// ToInit moves the QP from Reset to Init.
	ToInit() error
	// ToRTR moves the QP from Init to RTR (ready to receive), connected to the QP whose
	// endpoint bytes are remote. Receives may be posted from Init on.
	ToRTR(ctx context.Context, remote []byte) error
	// ToRTS moves the QP from RTR to RTS (ready to send). A network provider may wait here
	// until its peer has reached RTR as well.
	ToRTS(ctx context.Context) error
	// ToErr moves the QP to Err: its outstanding work completes with WRFlushErr.
	ToErr() error
	// PostSend posts a send work request. It returns ErrQueueFull when MaxSendWR requests
	// are outstanding, ErrQPState in Reset, Init and RTR, and ErrInvalid for a malformed
	// request (an atomic whose Local is not 8 bytes, say). In Err it accepts the request,
	// which completes with WRFlushErr, as libibverbs does.
	PostSend(wr *SendWR) error
	// PostRecv posts a receive. It returns ErrQueueFull when MaxRecvWR receives are posted
	// and ErrQPState in Reset. In Err the receive completes with WRFlushErr.
	PostRecv(wr *RecvWR) error
	// Close destroys the QP; outstanding work completes with WRFlushErr.
	Close() error
}

// CQ is a completion queue.
type CQ interface {
	// Poll moves up to len(wcs) completions into wcs and returns how many. It never blocks
	// and never allocates; it also drives the provider's progress for QPs on this CQ.
	Poll(wcs []WC) (int, error)
	// Wait blocks until at least one completion can be polled, ctx is done, or the CQ is
	// closed. It does not consume the completion.
	Wait(ctx context.Context) error
	// Close destroys the CQ.
	Close() error
}

// Connect moves qp through Init, RTR and RTS, connected to the QP whose endpoint bytes are
// remote. Both sides must call it (after exchanging Endpoint bytes).
func Connect(ctx context.Context, qp QP, remote []byte) error {
	if qp.State() == Reset {
		if err := qp.ToInit(); err != nil {
			return err
		}
	}
	if err := qp.ToRTR(ctx, remote); err != nil {
		return err
	}
	return qp.ToRTS(ctx)
}

// ArenaStats are a device arena's counters, for benchmarks and tests.
type ArenaStats struct {
	Reserved       int64 // sparse bytes reserved
	InUse          int64 // bytes allocated to live MRs
	ResidentFree   int64 // freed bytes still faulted in and kept for reuse
	Allocs         int64 // AllocMR calls that succeeded
	Reuses         int64 // allocations served from freed, still-mapped memory
	PageInsAvoided int64 // pages handed out already faulted in
	Trims          int64 // times memory was returned to the kernel
	TrimmedBytes   int64 // bytes returned to the kernel
	KeyRejections  int64 // remote accesses refused for a stale, forged or out-of-range key
	LiveMRs        int64 // registered MRs (arena and user memory)
	Quarantined    int64 // bytes withheld from reuse because a dead peer still pinned them
}
