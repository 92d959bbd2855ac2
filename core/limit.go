package core

import (
	"fmt"
	"strings"
	"time"
)

// Spend limits per period (ADR 0077): a limit caps what agents spend in a
// day or a week, for the whole home, one profile or one role, beside the
// per-tree budgets. Windows are UTC: a day runs from 00:00 UTC, a week
// from Monday 00:00 UTC.

// Limit scopes.
const (
	LimitHome    = "home"
	LimitProfile = "profile"
	LimitRole    = "role"
)

// Limit periods.
const (
	PeriodDay  = "day"
	PeriodWeek = "week"
)

// Limit is one spend limit: Scope (LimitHome, LimitProfile, LimitRole),
// Name (the profile's or role's; "" for the home), Period (PeriodDay,
// PeriodWeek) and the Amount it allows a window. Source is where it was
// set: "cli" (kandev limit set) or "config" (the spend_limits key).
type Limit struct {
	Scope  string `json:"scope"`
	Name   string `json:"name,omitempty"`
	Period string `json:"period"`
	Amount Amount `json:"amount"`
	Source string `json:"source"`
	SetBy  string `json:"set_by,omitempty"`
}

// Key names a limit's scope and period: "home/day", "profile:claude/week".
func (l Limit) Key() string {
	if l.Scope == LimitHome {
		return LimitHome + "/" + l.Period
	}
	return l.Scope + ":" + l.Name + "/" + l.Period
}

// Subject names what a limit covers, for people: "the home", "profile
// claude", "role coder".
func (l Limit) Subject() string {
	if l.Scope == LimitHome {
		return "the home"
	}
	return l.Scope + " " + l.Name
}

// Covers says whether a report of a task run by profile, assigned to role
// ("" for none), counts toward the limit.
func (l Limit) Covers(profile, role string) bool {
	switch l.Scope {
	case LimitHome:
		return true
	case LimitProfile:
		return profile == l.Name
	case LimitRole:
		return role != "" && role == l.Name
	}
	return false
}

// Window is the UTC window of a period that holds t: [start, end).
func Window(period string, t time.Time) (start, end time.Time) {
	t = t.UTC()
	day := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
	if period == PeriodWeek {
		back := (int(day.Weekday()) + 6) % 7 // days since Monday
		start = day.AddDate(0, 0, -back)
		return start, start.AddDate(0, 0, 7)
	}
	return day, day.AddDate(0, 0, 1)
}

// CheckLimitScope checks a limit's scope, name and period.
func CheckLimitScope(scope, name, period string) error {
	switch scope {
	case LimitHome:
		if name != "" {
			return Errorf(CodeValidation, "a home limit names no profile or role (got %q)", name)
		}
	case LimitProfile, LimitRole:
		if name == "" || strings.ContainsAny(name, ",=/: \t\n") {
			return Errorf(CodeValidation, "a %s limit needs the %s's name, without , = / : or spaces (got %q)", scope, scope, name)
		}
	default:
		return Errorf(CodeValidation, "limit scope %q: give home, profile or role", scope)
	}
	if period != PeriodDay && period != PeriodWeek {
		return Errorf(CodeValidation, "limit period %q: give day or week", period)
	}
	return nil
}

// ParseLimits reads the spend_limits key: comma-separated
// [profile:NAME/|role:NAME/]PERIOD=AMOUNT, e.g.
// "day=5USD,profile:claude/week=2M-tokens".
func ParseLimits(s string) ([]Limit, error) {
	var out []Limit
	seen := map[string]bool{}
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		bad := func(why string) ([]Limit, error) {
			return nil, Errorf(CodeValidation, "spend limit %q: %s; give limits such as day=5USD,profile:claude/week=2M-tokens,role:coder/day=1USD", f, why)
		}
		head, amt, ok := strings.Cut(f, "=")
		if !ok {
			return bad(`no "="`)
		}
		l := Limit{Scope: LimitHome, Source: "config"}
		period := strings.TrimSpace(head)
		if who, p, ok := strings.Cut(period, "/"); ok {
			scope, name, ok := strings.Cut(who, ":")
			if !ok {
				return bad("a scope is profile:NAME or role:NAME")
			}
			l.Scope, l.Name, period = scope, name, p
		}
		l.Period = period
		if err := CheckLimitScope(l.Scope, l.Name, l.Period); err != nil {
			return bad(err.Error())
		}
		a, err := ParseAmount(amt)
		if err != nil {
			return bad(err.Error())
		}
		l.Amount = a
		if seen[l.Key()] {
			return bad("given twice")
		}
		seen[l.Key()] = true
		out = append(out, l)
	}
	return out, nil
}

// limitMark is what LimitReason says, and ByLimit reads.
const limitMark = " limit is reached: "

// ByLimit says whether a budget halt's detail is a reached limit's
// (LimitReason), not a tree's budget.
func ByLimit(detail string) bool { return strings.Contains(detail, limitMark) }

// LimitReason is why a turn is held or stopped by a reached limit.
func LimitReason(l Limit, spent string, end time.Time) string {
	return fmt.Sprintf("%s's %s"+limitMark+"%s of %s spent this %s; turns under it wait until %s UTC, when the next %s begins "+
		"(or raise it: kandev limit set --per %s --amount AMOUNT%s)", l.Subject(), l.Period, spent, l.Amount.Format(l.Amount.Value), l.Period,
		end.UTC().Format("2006-01-02 15:04"), l.Period, l.Period, l.flag())
}

func (l Limit) flag() string {
	if l.Scope == LimitHome {
		return ""
	}
	return " --" + l.Scope + " " + l.Name
}
