package daemon

import (
	"testing"

	"github.com/kandev/kandev/core"
)

// SummaryOf exposes summaryOf to the integration tests.
func SummaryOf(t testing.TB, in core.Task) core.Task { return summaryOf(t, in) }
