package webinbox

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"strings"
	"time"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/textsafe"
	"github.com/kandev/kandev/store"
)

// PairTTL is how long a pairing code can be used, once.
const PairTTL = 10 * time.Minute

// codeAlphabet has no letters one reads for another (no 0/O, 1/I/L, U).
const codeAlphabet = "23456789ABCDEFGHJKMNPQRSTVWXYZ"

// codeLen is a code's length: 30^8 is about 6.6e11 codes, against at most
// failLimit wrong guesses a minute during the code's ten minutes.
const codeLen = 8

// deviceNameMax bounds a device's name, in runes.
const deviceNameMax = 40

// Devices keeps the paired devices and the pairing codes in the
// daemon's database (migration 0024): only hashes of codes and
// credentials are stored.
type Devices struct {
	db  *store.DB
	now func() time.Time
}

// NewDevices keeps devices in db.
func NewDevices(db *store.DB) *Devices { return &Devices{db: db, now: time.Now} }

// Device is a paired browser as the inbox knows it.
type Device struct {
	ID   string
	Name string
	// Credential is the secret the browser holds, set only when it is
	// issued (Pair); never stored.
	Credential string
}

func hashOf(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// NormalizeCode reads a code as a person types it: any case, with or
// without the dash and spaces.
func NormalizeCode(s string) string {
	s = strings.ToUpper(s)
	return strings.Map(func(r rune) rune {
		if r == '-' || r == ' ' {
			return -1
		}
		return r
	}, s)
}

// FormatCode writes a code in two groups: ABCD-EFGH.
func FormatCode(code string) string {
	if len(code) != codeLen {
		return code
	}
	return code[:4] + "-" + code[4:]
}

func randomCode() string {
	b := make([]byte, codeLen)
	if _, err := rand.Read(b); err != nil {
		panic("crypto/rand failed: " + err.Error())
	}
	for i := range b {
		// 256 % 30 != 0, so a little bias; the codes' space is still far
		// beyond what the attempt limit lets anyone try.
		b[i] = codeAlphabet[int(b[i])%len(codeAlphabet)]
	}
	return string(b)
}

func randomToken(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic("crypto/rand failed: " + err.Error())
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// CleanName is a device's name as kept: one line, no controls, bounded;
// "" becomes "browser".
func CleanName(name string) string {
	name = strings.TrimSpace(textsafe.Line(name))
	if r := []rune(name); len(r) > deviceNameMax {
		name = string(r[:deviceNameMax])
	}
	if name == "" {
		name = "browser"
	}
	return name
}

// NewCode makes a one-time pairing code for a device of that name,
// usable for PairTTL. The code is returned once; only its hash is kept.
func (d *Devices) NewCode(ctx context.Context, name string) (code string, expires time.Time, err error) {
	now := d.now().UTC()
	code = randomCode()
	expires = now.Add(PairTTL)
	if err := d.db.PruneWebPairCodes(ctx, now); err != nil {
		return "", time.Time{}, err
	}
	if err := d.db.InsertWebPairCode(ctx, hashOf(code), CleanName(name), now, expires); err != nil {
		return "", time.Time{}, err
	}
	return code, expires, nil
}

// ErrBadCode: no unused, unexpired code matches.
var ErrBadCode = errors.New("that pairing code is wrong, used or expired; run kandev web pair for a new one")

// Pair exchanges a code for a new device and its credential, once.
func (d *Devices) Pair(ctx context.Context, code string) (Device, error) {
	code = NormalizeCode(code)
	if len(code) != codeLen {
		return Device{}, ErrBadCode
	}
	now := d.now().UTC()
	dev := Device{ID: "d" + strings.ToLower(randomCode()[:6]), Credential: randomToken(32)}
	err := d.db.Tx(ctx, func(tx *store.Tx) error {
		name, err := tx.UseWebPairCode(ctx, hashOf(code), now)
		if err != nil {
			return err
		}
		dev.Name = name
		return tx.InsertWebDevice(ctx, store.WebDevice{ID: dev.ID, Name: name, TokenHash: hashOf(dev.Credential), CreatedAt: now})
	})
	if errors.Is(err, store.ErrNotFound) {
		return Device{}, ErrBadCode
	}
	if err != nil {
		return Device{}, err
	}
	return dev, nil
}

// Authenticate finds the unrevoked device a credential belongs to.
func (d *Devices) Authenticate(ctx context.Context, credential string) (Device, bool) {
	if credential == "" {
		return Device{}, false
	}
	w, err := d.db.WebDeviceByToken(ctx, hashOf(credential))
	if err != nil || w.Revoked() {
		return Device{}, false
	}
	if now := d.now().UTC(); now.Sub(w.LastSeenAt) > time.Minute {
		_ = d.db.TouchWebDevice(ctx, w.ID, now)
	}
	return Device{ID: w.ID, Name: w.Name}, true
}

// Record notes a change made from a device.
func (d *Devices) Record(ctx context.Context, dev Device, action, taskID string) error {
	return d.db.InsertWebAction(ctx, dev.ID, action, taskID, d.now().UTC())
}

// List is every device, revoked ones too.
func (d *Devices) List(ctx context.Context) ([]api.WebDevice, error) {
	ws, err := d.db.WebDevices(ctx)
	if err != nil {
		return nil, err
	}
	out := []api.WebDevice{}
	for _, w := range ws {
		out = append(out, deviceView(w))
	}
	return out, nil
}

// Revoke revokes a device by id; its cookie opens nothing from then on.
func (d *Devices) Revoke(ctx context.Context, id string) (api.WebDevice, error) {
	w, err := d.db.RevokeWebDevice(ctx, strings.TrimSpace(id), d.now().UTC())
	if errors.Is(err, store.ErrNotFound) {
		return api.WebDevice{}, core.Errorf(core.CodeNotFound, "no paired device %q (kandev web devices lists them)", id)
	}
	if err != nil {
		return api.WebDevice{}, err
	}
	return deviceView(w), nil
}

func deviceView(w store.WebDevice) api.WebDevice {
	return api.WebDevice{ID: w.ID, Name: w.Name, PairedAt: w.CreatedAt, LastSeenAt: w.LastSeenAt,
		RevokedAt: w.RevokedAt, Revoked: w.Revoked(), Actions: w.Actions}
}

// csrfToken is the device's CSRF token: derived from its credential, so
// only a page that the device's cookie opened can know it, and nothing
// more is stored.
func csrfToken(credential string) string {
	m := hmac.New(sha256.New, []byte(credential))
	m.Write([]byte("kandev web inbox csrf v1"))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

func csrfOK(credential, token string) bool {
	return token != "" && hmac.Equal([]byte(csrfToken(credential)), []byte(token))
}
