package store

import (
	"context"
	"fmt"
	"time"
)

// The web inbox's rows (migration 0024, ADR 0079): paired devices, the
// one-time codes that pair them, and what each device did. Codes and
// credentials are stored as hashes only; the caller hashes.

// WebDevice is a paired browser.
type WebDevice struct {
	ID         string
	Name       string
	TokenHash  string
	CreatedAt  time.Time
	LastSeenAt time.Time
	RevokedAt  time.Time
	// Actions counts the changes made from it (web_actions).
	Actions int
}

// Revoked reports whether the device was revoked.
func (d WebDevice) Revoked() bool { return !d.RevokedAt.IsZero() }

// InsertWebPairCode stores a pairing code's hash, usable once until expires.
func (q Queries) InsertWebPairCode(ctx context.Context, hash, name string, created, expires time.Time) error {
	_, err := q.q.ExecContext(ctx, `INSERT INTO web_pair_codes (code_hash, name, created_at, expires_at) VALUES (?, ?, ?, ?)`,
		hash, name, nanos(created), nanos(expires))
	if err != nil {
		return fmt.Errorf("store pairing code: %w", mapErr(err))
	}
	return nil
}

// UseWebPairCode marks an unused, unexpired code used and returns the
// device name it was made for; ErrNotFound when there is no such code,
// or it was used, or it expired.
func (q Queries) UseWebPairCode(ctx context.Context, hash string, now time.Time) (string, error) {
	var name string
	err := q.q.QueryRowContext(ctx, `UPDATE web_pair_codes SET used_at = ?
		WHERE code_hash = ? AND used_at IS NULL AND expires_at > ? RETURNING name`,
		nanos(now), hash, nanos(now)).Scan(&name)
	if err != nil {
		return "", mapErr(err)
	}
	return name, nil
}

// PruneWebPairCodes forgets codes that expired before now.
func (q Queries) PruneWebPairCodes(ctx context.Context, now time.Time) error {
	_, err := q.q.ExecContext(ctx, `DELETE FROM web_pair_codes WHERE expires_at <= ?`, nanos(now))
	return mapErr(err)
}

// InsertWebDevice stores a newly paired device.
func (q Queries) InsertWebDevice(ctx context.Context, d WebDevice) error {
	_, err := q.q.ExecContext(ctx, `INSERT INTO web_devices (id, name, token_hash, created_at, last_seen_at) VALUES (?, ?, ?, ?, ?)`,
		d.ID, d.Name, d.TokenHash, nanos(d.CreatedAt), nanos(d.CreatedAt))
	if err != nil {
		return fmt.Errorf("store device: %w", mapErr(err))
	}
	return nil
}

const webDeviceColumns = `id, name, token_hash, created_at, last_seen_at, COALESCE(revoked_at, 0),
	(SELECT COUNT(*) FROM web_actions a WHERE a.device_id = web_devices.id)`

func scanWebDevice(s scanner) (WebDevice, error) {
	var d WebDevice
	var created, seen, revoked int64
	if err := s.Scan(&d.ID, &d.Name, &d.TokenHash, &created, &seen, &revoked, &d.Actions); err != nil {
		return WebDevice{}, mapErr(err)
	}
	d.CreatedAt, d.LastSeenAt, d.RevokedAt = fromNanos(created), fromNanos(seen), fromNanos(revoked)
	return d, nil
}

// WebDeviceByToken finds a device by its credential's hash, revoked or not.
func (q Queries) WebDeviceByToken(ctx context.Context, hash string) (WebDevice, error) {
	return scanWebDevice(q.q.QueryRowContext(ctx, `SELECT `+webDeviceColumns+` FROM web_devices WHERE token_hash = ?`, hash))
}

// WebDevices lists every device, oldest first.
func (q Queries) WebDevices(ctx context.Context) ([]WebDevice, error) {
	rows, err := q.q.QueryContext(ctx, `SELECT `+webDeviceColumns+` FROM web_devices ORDER BY created_at, id`)
	if err != nil {
		return nil, mapErr(err)
	}
	defer rows.Close()
	var out []WebDevice
	for rows.Next() {
		d, err := scanWebDevice(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, mapErr(rows.Err())
}

// RevokeWebDevice revokes a device; ErrNotFound when there is none of that
// id. Revoking a revoked device keeps its first revocation.
func (q Queries) RevokeWebDevice(ctx context.Context, id string, now time.Time) (WebDevice, error) {
	if _, err := q.q.ExecContext(ctx, `UPDATE web_devices SET revoked_at = COALESCE(revoked_at, ?) WHERE id = ?`, nanos(now), id); err != nil {
		return WebDevice{}, mapErr(err)
	}
	return scanWebDevice(q.q.QueryRowContext(ctx, `SELECT `+webDeviceColumns+` FROM web_devices WHERE id = ?`, id))
}

// TouchWebDevice records that the device was seen at now.
func (q Queries) TouchWebDevice(ctx context.Context, id string, now time.Time) error {
	_, err := q.q.ExecContext(ctx, `UPDATE web_devices SET last_seen_at = ? WHERE id = ?`, nanos(now), id)
	return mapErr(err)
}

// InsertWebAction records a change made from a device.
func (q Queries) InsertWebAction(ctx context.Context, deviceID, action, taskID string, at time.Time) error {
	_, err := q.q.ExecContext(ctx, `INSERT INTO web_actions (device_id, action, task_id, at) VALUES (?, ?, ?, ?)`,
		deviceID, action, taskID, nanos(at))
	return mapErr(err)
}
