package wire

import "testing"

// TestSummaryColumnsDeclared: every column has a unique name and the
// accessor its kind reads, so a column added to the table is whole.
func TestSummaryColumnsDeclared(t *testing.T) {
	seen := map[string]bool{}
	for i, c := range summaryColumns {
		if c.name == "" || seen[c.name] {
			t.Fatalf("column %d: name %q missing or repeated", i, c.name)
		}
		seen[c.name] = true
		var ok bool
		switch c.kind {
		case colText:
			ok = c.text != nil
		case colTime:
			ok = c.time != nil
		case colInt:
			ok = c.int != nil && c.label != ""
		case colRefKind:
			ok = c.ref != nil && c.flag != 0
		case colRefName:
			ok = c.ref != nil && i > 0 && summaryColumns[i-1].kind == colRefKind
		case colJSON:
			ok = c.put != nil && c.get != nil && c.label != ""
		case colSessionText:
			ok = c.sessionText != nil
		case colSessionTime:
			ok = c.sessionTime != nil
		case colFlags, colUsage:
			ok = true
		}
		if !ok {
			t.Errorf("column %s: kind %d lacks what it reads", c.name, c.kind)
		}
	}
	if len(SummaryFields) != SummaryColumns {
		t.Errorf("SummaryFields names %d columns, SummaryColumns says %d", len(SummaryFields), SummaryColumns)
	}
}
