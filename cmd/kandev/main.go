// Command kandev coordinates teams of AI coding agents from the terminal.
package main

import (
	"os"

	"github.com/kandev/kandev/cmd"
)

func main() { os.Exit(cmd.Main()) }
