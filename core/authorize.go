package core

// IsDirectParent reports whether the task parentID is child's direct
// parent. Only the direct parent steers a task (interrupts it, stops it,
// answers its parent questions); a grandparent or a sibling does not.
func IsDirectParent(parentID string, child Task) bool {
	return child.ParentID != "" && child.ParentID == parentID
}
