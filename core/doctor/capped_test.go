package doctor

import (
	"strings"
	"testing"
)

func TestCappedKeepsAFewKB(t *testing.T) {
	c := &capped{max: maxProbeOutput}
	chunk := []byte(strings.Repeat("y", 1000))
	for range 10000 { // 10 MB
		if n, err := c.Write(chunk); n != len(chunk) || err != nil {
			t.Fatalf("write %d, %v", n, err)
		}
	}
	if c.buf.Len() != maxProbeOutput || maxProbeOutput > 8<<10 {
		t.Fatalf("kept %d bytes", c.buf.Len())
	}
}
