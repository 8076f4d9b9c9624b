package capability

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strconv"
	"time"
)

// PurposeControl is the purpose of requests to the host's control API.
// Signing for a purpose keeps a MAC made for one use from being accepted
// for another.
const PurposeControl = "tine/control/v1"

// macDomain starts every MAC'd message, so the key signs nothing else.
const macDomain = "tine-request-mac-v1"

// nonceSize is the number of random bytes in a nonce.
const nonceSize = 16

// maxNonce bounds the length of a nonce a verifier accepts.
const maxNonce = 64

// Request is one call from inside a run to the host, signed with the run's
// capability. Args holds the JSON arguments exactly as signed: a transport
// must carry them byte for byte, which encoding/json does for the compact
// JSON that Sign produces.
type Request struct {
	Purpose    string          `json:"purpose"`
	Run        string          `json:"run"`
	Generation int             `json:"generation"`
	Nonce      string          `json:"nonce"`
	IssuedAt   time.Time       `json:"issued_at"`
	Method     string          `json:"method"`
	Args       json.RawMessage `json:"args"`
	MAC        string          `json:"mac"`
}

// Sign makes a request to call method with args, marshalled to JSON, for
// purpose, signed with c at time now.
func Sign(c Capability, purpose, method string, args any, now time.Time) (Request, error) {
	raw, err := json.Marshal(args)
	if err != nil {
		return Request{}, fmt.Errorf("sign %s: arguments: %w", method, err)
	}
	var n [nonceSize]byte
	if _, err := rand.Read(n[:]); err != nil {
		return Request{}, fmt.Errorf("sign %s: nonce: %w", method, err)
	}
	r := Request{Purpose: purpose, Run: c.Run, Generation: c.Generation, Nonce: b64.EncodeToString(n[:]),
		IssuedAt: now, Method: method, Args: raw}
	r.MAC = b64.EncodeToString(r.mac(c.Secret))
	return r, nil
}

// mac returns the HMAC-SHA256 of r's signed fields under secret.
func (r Request) mac(secret []byte) []byte {
	h := hmac.New(sha256.New, secret)
	h.Write(r.message())
	return h.Sum(nil)
}

// message encodes the signed fields unambiguously: each is its length as
// eight big-endian bytes, then its bytes.
func (r Request) message() []byte {
	fields := [][]byte{[]byte(macDomain), []byte(r.Purpose), []byte(r.Run),
		[]byte(strconv.Itoa(r.Generation)), []byte(r.Nonce),
		[]byte(strconv.FormatInt(r.IssuedAt.UnixNano(), 10)), []byte(r.Method), r.Args}
	var b []byte
	for _, f := range fields {
		b = binary.BigEndian.AppendUint64(b, uint64(len(f)))
		b = append(b, f...)
	}
	return b
}
