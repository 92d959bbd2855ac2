package main

import (
	"bytes"
	"os"
	"testing"
)

// TestGeneratedFilesAreCurrent fails while core/types_json.go or
// core/daemon/encode_task.go is not what core.Task's fields generate: a
// field was added, removed or retagged without `go generate ./core/daemon`.
func TestGeneratedFilesAreCurrent(t *testing.T) {
	files, err := generate("../../..", "../..")
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range files {
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is stale: run go generate ./core/daemon", path)
		}
	}
}

// TestTaskgenRefuses: a field taskgen cannot write as encoding/json does
// stops the generation rather than producing a wrong encoder.
func TestTaskgenRefuses(t *testing.T) {
	for name, src := range map[string]string{
		"untagged":      "type Task struct { ID string }",
		"omitted first": "type Task struct { ID string `json:\"id,omitempty\"` }",
		"null bool":     "type Task struct { ID string `json:\"id\"`; B bool `json:\"b\" wire:\"null\"` }",
		"empty string":  "type Task struct { ID string `json:\"id\"`; S string `json:\"s\" wire:\"empty\"` }",
		"odd key":       "type Task struct { ID string `json:\"Id\"` }",
		"omit a struct": "type Task struct { ID string `json:\"id\"`; At time.Time `json:\"at,omitempty\"` }",
	} {
		dir := t.TempDir()
		if err := os.WriteFile(dir+"/types.go", []byte("package core\n"+src+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := loadTask(dir); err == nil {
			t.Errorf("%s: taskgen accepted %s", name, src)
		}
	}
}
