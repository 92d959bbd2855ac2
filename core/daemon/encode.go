package daemon

import (
	"bufio"
	"encoding/json"
	"io"

	"github.com/kandev/kandev/core"
)

// writeTaskArray writes tasks as a JSON array, one task at a time, so a
// large listing never sits in memory twice.
func writeTaskArray(w io.Writer, tasks []core.Task) error {
	bw := bufio.NewWriterSize(w, 256*1024)
	bw.WriteByte('[')
	for i := range tasks {
		if i > 0 {
			bw.WriteByte(',')
		}
		b, err := json.Marshal(tasks[i])
		if err != nil {
			return err
		}
		bw.Write(b)
	}
	bw.WriteString("]\n")
	return bw.Flush()
}
