package core

import "testing"

func TestIsDirectParent(t *testing.T) {
	for _, c := range []struct {
		name   string
		parent string
		child  Task
		want   bool
	}{
		{"its parent", "p", Task{ID: "c", ParentID: "p"}, true},
		{"another task", "g", Task{ID: "c", ParentID: "p"}, false},
		{"itself", "c", Task{ID: "c", ParentID: "p"}, false},
		{"a root has no parent", "", Task{ID: "r"}, false},
		{"an empty parent ID names nobody", "", Task{ID: "c", ParentID: ""}, false},
	} {
		if got := IsDirectParent(c.parent, c.child); got != c.want {
			t.Errorf("%s: IsDirectParent(%q, %+v) = %v, want %v", c.name, c.parent, c.child, got, c.want)
		}
	}
}
