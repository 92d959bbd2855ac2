package capability

import "testing"

// BenchmarkCheck: the check every tool call pays in the daemon (and the
// bridge on a refusal), on a create_task_kandev call.
func BenchmarkCheck(b *testing.B) {
	tool, _ := Lookup("create_task_kandev")
	raw := []byte(`{"title":"Add a stats command","description":"Count the tasks by status.","parent_id":"k3f9qa","start":false,"workspace":"new","base":"main"}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Check(tool, raw); err != nil {
			b.Fatal(err)
		}
	}
}
