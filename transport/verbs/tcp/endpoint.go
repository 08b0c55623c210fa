package tcp

import (
	"encoding/binary"
	"fmt"
	"net"
	"strconv"

	"github.com/gorma-hpc/gorma/transport/verbs"
)

// endpoint is what a peer needs to connect to one of our QPs. Wire form (little-endian):
//
//	0  magic "GRME"
//	4  version u8 (ProtocolVersion)
//	5  flags u8 (zero)
//	6  address length u16
//	8  device id u64
//	16 qpn u32
//	20 reserved u32 (zero)
//	24 address: the device's listen address as host:port
type endpoint struct {
	devID uint64
	qpn   uint32
	addr  string
}

const (
	endpointMagic   = "GRME"
	endpointFixed   = 24
	maxEndpointAddr = 512
)

// appendEndpoint appends e's wire form to b.
func appendEndpoint(b []byte, e endpoint) []byte {
	b = append(b, endpointMagic...)
	b = append(b, ProtocolVersion, 0)
	b = binary.LittleEndian.AppendUint16(b, uint16(len(e.addr)))
	b = binary.LittleEndian.AppendUint64(b, e.devID)
	b = binary.LittleEndian.AppendUint32(b, e.qpn)
	b = binary.LittleEndian.AppendUint32(b, 0)
	return append(b, e.addr...)
}

func badEndpoint(format string, args ...any) error {
	return &verbs.Error{Op: "to rtr", Provider: providerName, Err: verbs.ErrBadEndpoint,
		Detail: fmt.Sprintf(format, args...) + "; pass the exact bytes a tcp QP's Endpoint returned"}
}

// decodeEndpoint decodes endpoint bytes. It never panics; junk is ErrBadEndpoint.
func decodeEndpoint(b []byte) (endpoint, error) {
	if len(b) < endpointFixed {
		return endpoint{}, badEndpoint("%d bytes, need at least %d", len(b), endpointFixed)
	}
	if string(b[:4]) != endpointMagic {
		return endpoint{}, badEndpoint("magic %q is not %q (an endpoint of another provider?)", b[:4], endpointMagic)
	}
	if b[4] != ProtocolVersion {
		return endpoint{}, badEndpoint("protocol version %d, this build speaks %d", b[4], ProtocolVersion)
	}
	if b[5] != 0 || binary.LittleEndian.Uint32(b[20:]) != 0 {
		return endpoint{}, badEndpoint("unknown flags or reserved bits set")
	}
	n := int(binary.LittleEndian.Uint16(b[6:]))
	if n > maxEndpointAddr || len(b) != endpointFixed+n {
		return endpoint{}, badEndpoint("address length %d does not match %d trailing bytes", n, len(b)-endpointFixed)
	}
	e := endpoint{
		devID: binary.LittleEndian.Uint64(b[8:]),
		qpn:   binary.LittleEndian.Uint32(b[16:]),
		addr:  string(b[endpointFixed:]),
	}
	if e.devID == 0 || e.qpn == 0 {
		return endpoint{}, badEndpoint("device id %#x or qpn %d is zero", e.devID, e.qpn)
	}
	host, port, err := net.SplitHostPort(e.addr)
	if err != nil || host == "" {
		return endpoint{}, badEndpoint("address %q is not host:port", e.addr)
	}
	if p, err := strconv.ParseUint(port, 10, 16); err != nil || p == 0 {
		return endpoint{}, badEndpoint("address %q has no valid port", e.addr)
	}
	return e, nil
}

// AdvertiseAddr is the address peers dial to reach a listener bound to ln. A listener on
// an unspecified address (0.0.0.0, ::) advertises the host's first global unicast
// interface address, so endpoints are dialable from other hosts; if there is none, it
// advertises loopback.
func AdvertiseAddr(ln net.Addr) string {
	ta, ok := ln.(*net.TCPAddr)
	if !ok || !ta.IP.IsUnspecified() {
		return ln.String()
	}
	port := strconv.Itoa(ta.Port)
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && ipn.IP.IsGlobalUnicast() && ipn.IP.To4() != nil {
				return net.JoinHostPort(ipn.IP.String(), port)
			}
		}
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && ipn.IP.IsGlobalUnicast() {
				return net.JoinHostPort(ipn.IP.String(), port)
			}
		}
	}
	return net.JoinHostPort("127.0.0.1", port)
}

// dialsTo reports whether the QP (dev, qpn) dials its peer (pdev, pqpn): the smaller
// (device id, qpn) pair dials, the larger accepts.
func dialsTo(dev uint64, qpn uint32, pdev uint64, pqpn uint32) bool {
	if dev != pdev {
		return dev < pdev
	}
	return qpn < pqpn
}
