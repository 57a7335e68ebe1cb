package main

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"strconv"
	"strings"
)

// stormctl ui's door: the proxy lends its user's identity, so a request
// must show that it comes from the browser the user chose, not from any
// process that can reach 127.0.0.1. The URL stormctl prints carries a
// random token; the first request with it gets a cookie holding the
// token (HttpOnly: no script reads it; SameSite=Strict: no other site's
// page makes the browser send it) and is redirected to the same URL
// without the token, so that it leaves the address bar and the history.
// Every later request must carry the cookie.

// uiTokenParam is the query parameter of the printed URL.
const uiTokenParam = "token"

// newUIToken is a fresh token: 128 random bits (crypto/rand), URL-safe.
func newUIToken() string { return rand.Text() }

// uiAccess admits the holder of one token.
type uiAccess struct {
	token  string
	cookie string // the cookie's name; cookies are per host, not per port, so it names the port
}

func newUIAccess(token string, port int) *uiAccess {
	return &uiAccess{token: token, cookie: "stormctl_ui_" + strconv.Itoa(port)}
}

// admit reports whether r may go on to the nimbus. When it may not, admit
// has answered it: the token exchanged for the cookie and a redirect, or a
// refusal saying to open the URL stormctl printed.
func (a *uiAccess) admit(w http.ResponseWriter, r *http.Request) bool {
	q := r.URL.Query()
	if q.Has(uiTokenParam) && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
		if !a.matches(q.Get(uiTokenParam)) {
			a.refuse(w, r, "this token is not the one stormctl ui printed (it changes each time stormctl ui starts)")
			return false
		}
		a.exchange(w, r)
		return false
	}
	c, err := r.Cookie(a.cookie)
	if err != nil {
		a.refuse(w, r, "this browser has not opened the URL stormctl ui printed")
		return false
	}
	if !a.matches(c.Value) {
		a.refuse(w, r, "this browser's cookie is from another run of stormctl ui")
		return false
	}
	return true
}

// matches compares in constant time, so that the answer's timing does not
// tell how much of a guess was right.
func (a *uiAccess) matches(got string) bool {
	return subtle.ConstantTimeCompare([]byte(got), []byte(a.token)) == 1
}

// exchange sets the cookie and redirects to r's URL without the token.
func (a *uiAccess) exchange(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{
		Name: a.cookie, Value: a.token, Path: "/",
		HttpOnly: true, SameSite: http.SameSiteStrictMode,
	})
	q := r.URL.Query()
	q.Del(uiTokenParam)
	// One leading slash only: "//host" would be another site.
	to := "/" + strings.TrimLeft(r.URL.EscapedPath(), "/")
	if len(q) > 0 {
		to += "?" + q.Encode()
	}
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
	http.Redirect(w, r, to, http.StatusSeeOther)
}

// refuse answers 401 with why and what to do: in Storm's JSON to the
// UI's API calls, else as a short page.
func (a *uiAccess) refuse(w http.ResponseWriter, r *http.Request, why string) {
	const todo = "open the URL that stormctl ui printed (http://127.0.0.1:PORT/?token=...) in this browser"
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	if strings.Contains(r.Header.Get("Accept"), "application/json") {
		h.Set("Content-Type", "application/json; charset=utf-8")
		w.WriteHeader(http.StatusUnauthorized)
		_ = json.NewEncoder(w).Encode(map[string]string{
			"error":        "401 Unauthorized",
			"errorMessage": "stormctl ui: " + why + ": " + todo,
		})
		return
	}
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", "default-src 'none'")
	w.WriteHeader(http.StatusUnauthorized)
	fmt.Fprintf(w, "<!doctype html>\n<title>stormctl ui: not this browser yet</title>\n"+
		"<h1>stormctl ui</h1>\n<p>This local proxy acts with its user's certificate, so it answers only the browser that opened its URL. %s: %s.</p>\n",
		html.EscapeString(strings.ToUpper(why[:1])+why[1:]), html.EscapeString(todo))
}
