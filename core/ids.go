package core

import (
	"crypto/rand"
	"math/big"
)

// idAlphabet drops characters people misread (0/o, 1/l/i) so ids survive
// being read aloud or copied by hand.
const idAlphabet = "23456789abcdefghjkmnpqrstuvwxyz"

// IDLength is short enough to type and gives 31^6 ≈ 887M ids; the store's
// primary key catches the rare collision and the caller draws again.
const IDLength = 6

// NewID draws a random task id.
func NewID() string {
	b := make([]byte, IDLength)
	max := big.NewInt(int64(len(idAlphabet)))
	for i := range b {
		n, err := rand.Int(rand.Reader, max)
		if err != nil {
			panic("crypto/rand failed: " + err.Error())
		}
		b[i] = idAlphabet[n.Int64()]
	}
	return string(b)
}
