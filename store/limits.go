package store

import (
	"context"
	"fmt"
	"time"
)

// SpendLimit is a spend_limits row (ADR 0077).
type SpendLimit struct {
	Scope, Name, Period string
	Kind                string
	Value               int64 // millionths of Currency for a cost, else tokens
	Currency            string
	SetBy               string
	SetAt               time.Time
}

// SetSpendLimit fixes a limit, replacing the one of its scope and period.
func (q Queries) SetSpendLimit(ctx context.Context, l SpendLimit) error {
	_, err := q.q.ExecContext(ctx, `INSERT INTO spend_limits (scope, name, period, kind, value, currency, set_by, set_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (scope, name, period) DO UPDATE SET kind = excluded.kind,
		value = excluded.value, currency = excluded.currency, set_by = excluded.set_by, set_at = excluded.set_at`,
		l.Scope, l.Name, l.Period, l.Kind, l.Value, l.Currency, l.SetBy, nanos(l.SetAt))
	if err != nil {
		return fmt.Errorf("set limit: %w", mapErr(err))
	}
	return nil
}

// DeleteSpendLimit removes a limit; ErrNotFound when there is none.
func (q Queries) DeleteSpendLimit(ctx context.Context, scope, name, period string) error {
	return q.execOne(ctx, "remove limit", `DELETE FROM spend_limits WHERE scope = ? AND name = ? AND period = ?`, scope, name, period)
}

// SpendLimits lists the limits set, in scope, name and period order.
func (q Queries) SpendLimits(ctx context.Context) ([]SpendLimit, error) {
	rows, err := q.q.QueryContext(ctx, `SELECT scope, name, period, kind, value, currency, set_by, set_at FROM spend_limits
		ORDER BY scope, name, period`)
	if err != nil {
		return nil, fmt.Errorf("read limits: %w", mapErr(err))
	}
	defer rows.Close()
	var out []SpendLimit
	for rows.Next() {
		var l SpendLimit
		var at int64
		if err := rows.Scan(&l.Scope, &l.Name, &l.Period, &l.Kind, &l.Value, &l.Currency, &l.SetBy, &at); err != nil {
			return nil, fmt.Errorf("read limits: %w", mapErr(err))
		}
		l.SetAt = time.Unix(0, at).UTC()
		out = append(out, l)
	}
	return out, mapErr(rows.Err())
}

// LimitSpend sums the reports in [from, to) a limit counts, by currency
// ("" for reports without a cost): all of them (scope home), a profile's
// or a role's.
func (q Queries) LimitSpend(ctx context.Context, scope, name string, from, to time.Time) (tokens int64, costs map[string]int64, err error) {
	where := ""
	args := []any{nanos(from), nanos(to)}
	switch scope {
	case "profile":
		where, args = " AND profile = ?", append(args, name)
	case "role":
		where, args = " AND role = ?", append(args, name)
	}
	rows, err := q.q.QueryContext(ctx, `SELECT currency, sum(tokens), sum(cost_micros) FROM usage_turns
		WHERE at >= ? AND at < ?`+where+` GROUP BY currency`, args...)
	if err != nil {
		return 0, nil, fmt.Errorf("limit spend: %w", mapErr(err))
	}
	defer rows.Close()
	costs = map[string]int64{}
	for rows.Next() {
		var cur string
		var n, c int64
		if err := rows.Scan(&cur, &n, &c); err != nil {
			return 0, nil, fmt.Errorf("limit spend: %w", mapErr(err))
		}
		tokens += n
		if cur != "" && c != 0 {
			costs[cur] += c
		}
	}
	return tokens, costs, mapErr(rows.Err())
}

// MarkLimitReached records that a limit was reached in the window that
// starts at start; first is true the first time (the one a person is
// told of).
func (q Queries) MarkLimitReached(ctx context.Context, key string, start, at time.Time, detail, taskID string) (first bool, err error) {
	res, err := q.q.ExecContext(ctx, `INSERT INTO spend_limit_reached (limit_key, window_start, at, detail, task_id) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (limit_key, window_start) DO NOTHING`, key, nanos(start), nanos(at), detail, taskID)
	if err != nil {
		return false, fmt.Errorf("mark limit: %w", mapErr(err))
	}
	n, err := res.RowsAffected()
	return n > 0, mapErr(err)
}

// LimitReached says whether a limit was marked reached in the window that
// starts at start, why, and the task whose report reached it.
func (q Queries) LimitReached(ctx context.Context, key string, start time.Time) (ok bool, detail, taskID string, err error) {
	err = q.q.QueryRowContext(ctx, `SELECT detail, task_id FROM spend_limit_reached WHERE limit_key = ? AND window_start = ?`,
		key, nanos(start)).Scan(&detail, &taskID)
	if err != nil {
		if mapErr(err) == ErrNotFound {
			return false, "", "", nil
		}
		return false, "", "", fmt.Errorf("read limit: %w", mapErr(err))
	}
	return true, detail, taskID, nil
}

// ClearLimitReached forgets a limit's reached marks (it was raised or
// removed): turns under it may start again.
func (q Queries) ClearLimitReached(ctx context.Context, key string) error {
	_, err := q.q.ExecContext(ctx, `DELETE FROM spend_limit_reached WHERE limit_key = ?`, key)
	return mapErr(err)
}
