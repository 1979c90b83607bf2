// main.go: the events API (SPEC.md section 1) in Go, the benchmark's Go
// peer: net/http, Debian's pgx v4 (pgxpool sized to the sweep value) and
// golang-jwt (RS256 only), GOMAXPROCS from the environment (= cores).
//
// Same contract as cfpm with auth.errors = rfc6750: token verified on
// every request, the same claim checks (alg, crit, typ, kid, iss, aud,
// exp, nbf, sub, scope words), the same statuses and JSON bodies.
// Known difference: encoding/json keeps the last duplicate member instead
// of rejecting the token or body.
//
// Build offline (Debian packages only):
//   GO111MODULE=off GOPATH=/usr/share/gocode go build -o events-go main.go
// Run:
//   events-go -listen 127.0.0.1:8081 -dsn 'host=/dir port=5432 ...' \
//     -pool 16 -pubkey jwt.pub.pem
package main

import (
	"context"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"log"
	"math"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/golang-jwt/jwt"
	"github.com/jackc/pgx/v4"
	"github.com/jackc/pgx/v4/pgxpool"
)

const (
	maxBody  = 64 * 1024
	maxToken = 8192
	maxDepth = 64
	realm    = `Bearer realm="events"`
	sqlGet   = `SELECT id, subject, kind, payload::text,
		to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')
		FROM events WHERE id = $1 AND subject = $2`
	sqlInsert = `INSERT INTO events (subject, kind, payload)
		VALUES ($1, $2, $3::jsonb) RETURNING id`
)

// server holds what every request needs; it is read-only after start.
type server struct {
	db       *pgxpool.Pool
	key      *rsa.PublicKey
	kid      string
	issuer   string
	audience string
	parser   *jwt.Parser
}

// claims of a verified token that the handlers use.
type claims struct {
	sub   string
	scope string
}

func reply(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(body)
}

func fail(w http.ResponseWriter, status int, code string) {
	reply(w, status, []byte(`{"error":"`+code+`"}`))
}

func jsonString(s string) []byte {
	b, _ := json.Marshal(s)
	return b
}

// bearer extracts the one token of an Authorization value.
// Returns (token, 0) or ("", 401 no credentials / 400 malformed).
func bearer(h string) (string, int) {
	h = strings.Trim(h, " \t")
	sp := strings.IndexAny(h, " \t")
	scheme := h
	if sp >= 0 {
		scheme = h[:sp]
	}
	if h == "" || !strings.EqualFold(scheme, "Bearer") {
		return "", http.StatusUnauthorized
	}
	if sp < 0 {
		return "", http.StatusBadRequest
	}
	tok := strings.TrimLeft(h[sp:], " \t")
	if tok == "" || strings.ContainsAny(tok, " \t") {
		return "", http.StatusBadRequest
	}
	return tok, 0
}

// keyFor checks the header (alg pinned by the parser; crit, typ, kid
// here) and returns the one verification key.
func (s *server) keyFor(t *jwt.Token) (interface{}, error) {
	if _, ok := t.Header["crit"]; ok {
		return nil, errors.New("crit")
	}
	if typ, ok := t.Header["typ"]; ok && typ != "JWT" && typ != "at+jwt" {
		return nil, errors.New("typ")
	}
	if kid, ok := t.Header["kid"]; ok && kid != s.kid {
		return nil, errors.New("kid")
	}
	return s.key, nil
}

// numericDate: a finite JSON number (float64 after decoding).
func numericDate(v interface{}) (float64, bool) {
	f, ok := v.(float64)
	return f, ok && !math.IsInf(f, 0) && !math.IsNaN(f)
}

// checkClaims applies the policy (iss, aud, exp, nbf, sub, scope type).
func (s *server) checkClaims(m jwt.MapClaims, now float64) (claims, bool) {
	var c claims
	if iss, _ := m["iss"].(string); iss != s.issuer || m["iss"] == nil {
		return c, false
	}
	audOK := false
	switch a := m["aud"].(type) {
	case string:
		audOK = a == s.audience
	case []interface{}:
		for _, x := range a {
			if x == s.audience {
				audOK = true
			}
		}
	}
	if !audOK {
		return c, false
	}
	if exp, ok := numericDate(m["exp"]); !ok || !(now < exp) {
		return c, false
	}
	if v, present := m["nbf"]; present {
		if nbf, ok := numericDate(v); !ok || now < nbf {
			return c, false
		}
	}
	sub, ok := m["sub"].(string)
	if !ok || sub == "" || strings.IndexByte(sub, 0) >= 0 {
		return c, false
	}
	c.sub = sub
	if v, present := m["scope"]; present {
		if c.scope, ok = v.(string); !ok {
			return c, false
		}
	}
	return c, true
}

// authorize authenticates r for scope; on failure it has replied
// (400/401/403, RFC 6750) and returns false.
func (s *server) authorize(w http.ResponseWriter, r *http.Request, scope string) (claims, bool) {
	tok, st := bearer(r.Header.Get("Authorization"))
	switch st {
	case http.StatusUnauthorized:
		w.Header().Set("WWW-Authenticate", realm)
		fail(w, st, "unauthorized")
		return claims{}, false
	case http.StatusBadRequest:
		w.Header().Set("WWW-Authenticate", realm+`, error="invalid_request"`)
		fail(w, st, "invalid_request")
		return claims{}, false
	}
	var c claims
	ok := len(tok) <= maxToken
	if ok {
		m := jwt.MapClaims{}
		_, err := s.parser.ParseWithClaims(tok, m, s.keyFor)
		ok = err == nil
		if ok {
			c, ok = s.checkClaims(m, float64(time.Now().Unix()))
		}
	}
	if !ok {
		w.Header().Set("WWW-Authenticate", realm+`, error="invalid_token"`)
		fail(w, http.StatusUnauthorized, "invalid_token")
		return c, false
	}
	for _, word := range strings.Split(c.scope, " ") {
		if word == scope {
			return c, true
		}
	}
	w.Header().Set("WWW-Authenticate", realm+
		`, error="insufficient_scope", scope="`+scope+`"`)
	fail(w, http.StatusForbidden, "insufficient_scope")
	return c, false
}

func (s *server) getAuth(w http.ResponseWriter, r *http.Request) {
	c, ok := s.authorize(w, r, "events:read")
	if !ok {
		return
	}
	body := append([]byte(`{"sub":`), jsonString(c.sub)...)
	body = append(body, `,"scope":`...)
	body = append(body, jsonString(c.scope)...)
	reply(w, http.StatusOK, append(body, '}'))
}

// parseID: decimal digits, leading zeros allowed, 1..2^63-1.
func parseID(s string) (int64, bool) {
	if s == "" || strings.Trim(s, "0123456789") != "" {
		return 0, false
	}
	id, err := strconv.ParseInt(strings.TrimLeft(s, "0"), 10, 64)
	return id, err == nil && id >= 1
}

func (s *server) dbFail(w http.ResponseWriter, err error) {
	log.Printf("database error: %v", err)
	fail(w, http.StatusServiceUnavailable, "unavailable")
}

func (s *server) getEvent(w http.ResponseWriter, r *http.Request, raw string) {
	c, ok := s.authorize(w, r, "events:read")
	if !ok {
		return
	}
	id, ok := parseID(raw)
	if !ok {
		fail(w, http.StatusNotFound, "not_found")
		return
	}
	var subject, kind, payload, created string
	err := s.db.QueryRow(r.Context(), sqlGet, id, c.sub).Scan(&id,
		&subject, &kind, &payload, &created)
	if errors.Is(err, pgx.ErrNoRows) {
		fail(w, http.StatusNotFound, "not_found")
		return
	}
	if err != nil {
		s.dbFail(w, err)
		return
	}
	// payload is jsonb output: already JSON, embedded verbatim.
	body := strconv.AppendInt([]byte(`{"id":`), id, 10)
	body = append(body, `,"subject":`...)
	body = append(body, jsonString(subject)...)
	body = append(body, `,"kind":`...)
	body = append(body, jsonString(kind)...)
	body = append(body, `,"payload":`...)
	body = append(body, payload...)
	body = append(body, `,"created_at":"`...)
	body = append(body, created...)
	reply(w, http.StatusOK, append(body, `"}`...))
}

// isJSONType: application/json, parameters allowed.
func isJSONType(ct string) bool {
	t := strings.Trim(strings.SplitN(ct, ";", 2)[0], " \t")
	return strings.EqualFold(t, "application/json")
}

// depthOK: JSON nesting (objects and arrays) of at most max.
func depthOK(b []byte, max int) bool {
	depth, inString := 0, false
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case inString && c == '\\':
			i++
		case inString:
			inString = c != '"'
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			if depth++; depth > max {
				return false
			}
		case c == '}' || c == ']':
			depth--
		}
	}
	return true
}

// parseEvent returns kind and the payload object's JSON text.
func parseEvent(body []byte) (string, string, bool) {
	var doc map[string]json.RawMessage
	if !depthOK(body, maxDepth) || json.Unmarshal(body, &doc) != nil ||
		doc == nil {
		return "", "", false
	}
	var kind string
	raw := doc["kind"]
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &kind) != nil ||
		kind == "" {
		return "", "", false
	}
	p := doc["payload"]
	if len(p) == 0 || p[0] != '{' {
		return "", "", false
	}
	return kind, string(p), true
}

func (s *server) postEvent(w http.ResponseWriter, r *http.Request) {
	c, ok := s.authorize(w, r, "events:write")
	if !ok {
		return
	}
	if r.ContentLength > maxBody {
		fail(w, http.StatusRequestEntityTooLarge, "payload_too_large")
		return
	}
	if !isJSONType(r.Header.Get("Content-Type")) {
		fail(w, http.StatusUnsupportedMediaType, "unsupported_media_type")
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil {
		fail(w, http.StatusBadRequest, "invalid_request")
		return
	}
	if len(body) > maxBody {
		fail(w, http.StatusRequestEntityTooLarge, "payload_too_large")
		return
	}
	kind, payload, ok := parseEvent(body)
	if !ok {
		fail(w, http.StatusBadRequest, "invalid_request")
		return
	}
	var id int64
	if err := s.db.QueryRow(r.Context(), sqlInsert, c.sub, kind,
		payload).Scan(&id); err != nil {
		s.dbFail(w, err)
		return
	}
	reply(w, http.StatusCreated, append(strconv.AppendInt(
		[]byte(`{"id":`), id, 10), '}'))
}

func (s *server) health(w http.ResponseWriter, r *http.Request) {
	if err := s.db.Ping(r.Context()); err != nil {
		reply(w, http.StatusServiceUnavailable, []byte(`{"status":"unavailable"}`))
		return
	}
	reply(w, http.StatusOK, []byte(`{"status":"ok"}`))
}

// ServeHTTP routes on the raw path (no percent-decoding), like cfpm.
func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := r.RequestURI
	if i := strings.IndexByte(path, '?'); i >= 0 {
		path = path[:i]
	}
	only := func(method string, fn func()) {
		if r.Method == method {
			fn()
			return
		}
		w.Header().Set("Allow", method)
		fail(w, http.StatusMethodNotAllowed, "method_not_allowed")
	}
	switch {
	case path == "/auth":
		only("GET", func() { s.getAuth(w, r) })
	case path == "/events":
		only("POST", func() { s.postEvent(w, r) })
	case strings.HasPrefix(path, "/events/"):
		only("GET", func() { s.getEvent(w, r, path[len("/events/"):]) })
	case path == "/health":
		only("GET", func() { s.health(w, r) })
	default:
		fail(w, http.StatusNotFound, "not_found")
	}
}

func main() {
	listen := flag.String("listen", "127.0.0.1:8081", "host:port")
	dsn := flag.String("dsn", "", "libpq-style connection string")
	pool := flag.Int("pool", 8, "pgxpool size (the sweep value)")
	pubkey := flag.String("pubkey", "", "SPKI PEM public key file")
	kid := flag.String("kid", "bench-1", "key id")
	issuer := flag.String("issuer", "https://auth.bench.local", "iss")
	audience := flag.String("audience", "events-api", "aud")
	flag.Parse()

	pem, err := os.ReadFile(*pubkey)
	if err != nil {
		log.Fatalf("read key: %v", err)
	}
	key, err := jwt.ParseRSAPublicKeyFromPEM(pem)
	if err != nil {
		log.Fatalf("parse key: %v", err)
	}
	cfg, err := pgxpool.ParseConfig(*dsn)
	if err != nil {
		log.Fatalf("dsn: %v", err)
	}
	cfg.MaxConns = int32(*pool)
	cfg.MinConns = int32(*pool)
	db, err := pgxpool.ConnectConfig(context.Background(), cfg)
	if err != nil {
		log.Fatalf("connect: %v", err)
	}
	s := &server{db: db, key: key, kid: *kid, issuer: *issuer,
		audience: *audience,
		// alg is pinned here: the header only has to match.
		parser: jwt.NewParser(jwt.WithValidMethods([]string{"RS256"}),
			jwt.WithoutClaimsValidation())}
	srv := &http.Server{Addr: *listen, Handler: s,
		ReadHeaderTimeout: 10 * time.Second}
	log.Fatal(srv.ListenAndServe())
}
