package tcp

import (
	"time"

	"github.com/gorma-hpc/gorma/transport/verbs"
)

// SecretSetter is the method of a tcp device opened with Options.DeferSecret that
// supplies its secret; reach it with a type assertion on the verbs.Device.
type SecretSetter interface {
	SetSecret(secret []byte) error
}

var _ SecretSetter = (*device)(nil)

// SetSecret sets the secret of a device opened with Options.DeferSecret: at least
// MinSecretLen bytes, shared by every device of the job, set once. It fails with
// verbs.ErrInvalid for a short secret or a device whose secret is already set, and with
// verbs.ErrClosed once the device is closed. Inbound connections waiting for the secret
// go on with their handshakes.
func (d *device) SetSecret(secret []byte) error {
	if len(secret) < MinSecretLen {
		return newErr("set secret", 0, verbs.ErrInvalid,
			"the secret is %d bytes; the tcp provider needs at least %d random bytes shared by the job", len(secret), MinSecretLen)
	}
	d.secretMu.Lock()
	defer d.secretMu.Unlock()
	if d.hasSecret() {
		return newErr("set secret", 0, verbs.ErrInvalid,
			"the device's secret is already set; SetSecret is called once, on a device opened with tcp.Options.DeferSecret")
	}
	if d.isClosed() {
		return d.errClosed("set secret")
	}
	d.secret = append([]byte(nil), secret...)
	close(d.secretOK)
	return nil
}

// hasSecret reports whether the device's secret is set (d.secret may then be read).
func (d *device) hasSecret() bool {
	select {
	case <-d.secretOK:
		return true
	default:
		return false
	}
}

// awaitSecret waits until the secret is set, and reports false if deadline passes or the
// device closes first.
func (d *device) awaitSecret(deadline time.Time) bool {
	if d.hasSecret() {
		return true
	}
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case <-d.secretOK:
		return true
	case <-d.closing:
	case <-t.C:
	}
	return false
}
