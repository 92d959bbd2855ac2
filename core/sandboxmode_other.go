//go:build !darwin

package core

const isDarwin = false
