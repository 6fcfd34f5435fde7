/**
 * The browser's way through the server's password: a login form that checks the same username
 * and password as HTTP Basic and sets an HttpOnly cookie. The cookie's value is an HMAC of the
 * credentials under a key made when the server starts, so it is worthless to another server
 * process and stops working when the password changes or the server restarts.
 */
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto"

export const COOKIE = "agent_auth"

export interface Credentials {
  readonly username: string
  readonly password: string
}

/** The cookie value a login with these credentials gets from this server process. */
export const makeToken = (key: Buffer, credentials: Credentials): string =>
  createHmac("sha256", key).update(`${credentials.username}\u0000${credentials.password}`).digest("base64url")

export const newKey = (): Buffer => randomBytes(32)

export const sameSecret = (given: string, wanted: string): boolean => {
  const a = Buffer.from(given)
  const b = Buffer.from(wanted)
  return a.length === b.length && timingSafeEqual(a, b)
}

/** The value of one cookie in a `Cookie` header. */
export const cookieValue = (header: string | undefined, name: string): string | undefined => {
  if (header === undefined) return undefined
  for (const pair of header.split(";")) {
    const at = pair.indexOf("=")
    if (at > 0 && pair.slice(0, at).trim() === name) return pair.slice(at + 1).trim()
  }
  return undefined
}

/** Where a login may send the browser on: a path of this server, never another site (`//host`, `/\host`). */
export const safeNext = (value: string | null | undefined): string =>
  value !== null && value !== undefined && /^\/(?![/\\])[^\s]*$/.test(value) ? value : "/"

/** `Set-Cookie` for a login; `secure` when the browser reached the server over HTTPS (a proxy says so). */
export const loginCookie = (token: string, secure: boolean): string =>
  `${COOKIE}=${token}; Path=/; HttpOnly; SameSite=Strict${secure ? "; Secure" : ""}`

export const logoutCookie = `${COOKIE}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0`

const escapeHtml = (text: string) =>
  text.replace(/[&<>"']/g, (char) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[char]!)

/** The login page: a plain form (no script), styled by the page's own stylesheet. */
export const loginPage = (options: { readonly next: string; readonly failed: boolean }): string =>
  `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>agent · log in</title>
<link rel="icon" href="/assets/icon.svg" type="image/svg+xml">
<link rel="stylesheet" href="/assets/app.css">
</head>
<body class="login">
<form class="login-form" method="post" action="/login">
<h1>agent</h1>
<p>This server asks for its username and password (<code>AGENT_SERVER_USERNAME</code>, <code>AGENT_SERVER_PASSWORD</code>).</p>
${options.failed ? '<p class="error" role="alert">Wrong username or password.</p>' : ""}
<label>Username <input name="username" autocomplete="username" value="agent" required></label>
<label>Password <input name="password" type="password" autocomplete="current-password" required autofocus></label>
<input type="hidden" name="next" value="${escapeHtml(options.next)}">
<button type="submit">Log in</button>
</form>
</body>
</html>
`
