// Lookout in a browser: sign in, then keep one gallery page live two ways, side by side.
//
// The page and the API are on different origins, so every answer it reads must carry
// lookout's CORS headers (`--cors-origins`). It reads the API's base URL from `?api=`.
//
// Stable hooks for tests: #session[data-state] (signing-in, signed-in, error) and
// [data-user]; each view, #view-sse and #view-poll, has data-state (waiting, connecting,
// live, reconnecting, retrying), data-updates (renderings shown), data-cursor (the
// `epoch-revision` of the rendering shown) and data-updated-at; its photos are
// `li[data-id]` with the title in `.title`.
'use strict';

const api = (new URLSearchParams(location.search).get('api') || 'http://127.0.0.1:3001').replace(/\/+$/, '');
const viewPath = '/v1/galleries?page=1&per_page=6';
const demoUser = { email: 'demo@example.com', password: 'demo-password' };
const longestDelay = 30000;

let token = null;
let signingIn = null;

// -- Signing in -------------------------------------------------------------------------

/** Signs in as the demo reader, retrying with backoff; one sign-in at a time. */
function signIn() {
  signingIn ??= signInUntilDone().finally(() => { signingIn = null; });
  return signingIn;
}

async function signInUntilDone() {
  // The first failure stays shown through the retries, so a reader (or a test) sees it.
  if (document.getElementById('session').dataset.state !== 'error') setSession('signing-in', `Signing in as ${demoUser.email}…`);
  for (let delay = 1000; ; delay = Math.min(delay * 2, longestDelay)) {
    try {
      const response = await fetch(`${api}/v1/auth/login`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify(demoUser),
      });
      if (!response.ok) throw new Error(`login answered ${response.status} ${await errorCode(response)}`);
      token = (await response.json()).token;
      const claims = tokenClaims(token);
      setSession('signed-in', `Signed in as ${claims.sub} (${claims.scope}) until ${clock(new Date(claims.exp * 1000))}`, claims.sub);
      log(`Signed in as ${claims.sub}.`);
      return token;
    } catch (error) {
      setSession('error', `${explain(error)} Trying again in ${delay / 1000} s.`);
      log(`Sign-in failed: ${explain(error)}`);
      await sleep(delay);
    }
  }
}

/** The claims of a JWT, read without checking it: only the server needs to trust it. */
function tokenClaims(jwt) {
  const payload = jwt.split('.')[1].replace(/-/g, '+').replace(/_/g, '/');
  const bytes = Uint8Array.from(atob(payload), (c) => c.charCodeAt(0));
  return JSON.parse(new TextDecoder().decode(bytes));
}

function tokenExpired() {
  return !token || tokenClaims(token).exp * 1000 <= Date.now();
}

function setSession(state, text, user = '') {
  const element = document.getElementById('session');
  element.dataset.state = state;
  element.dataset.user = user;
  document.getElementById('session-text').textContent = text;
}

// -- One view of the gallery page ---------------------------------------------------------

class GalleryView {
  constructor(element) {
    element.append(document.getElementById('view-body').content.cloneNode(true));
    this.element = element;
    this.updates = 0;
    this.shown = new Map();
  }

  setState(state, text) {
    this.element.dataset.state = state;
    this.element.querySelector('.status').textContent = text;
  }

  /** Shows a rendering; marks the photos that differ from the previous one. Returns their titles. */
  render(photos, cursor) {
    const first = this.updates === 0;
    const changed = photos.filter((photo) => !first && JSON.stringify(this.shown.get(photo.id)) !== JSON.stringify(photo));
    const changedIds = new Set(changed.map((photo) => photo.id));
    this.element.querySelector('.gallery').replaceChildren(...photos.map((photo) => tile(photo, changedIds.has(photo.id))));
    this.shown = new Map(photos.map((photo) => [photo.id, photo]));
    this.updates += 1;
    const now = new Date();
    Object.assign(this.element.dataset, { updates: this.updates, cursor, updatedAt: now.toISOString() });
    this.element.querySelector('.updates').textContent = `${this.updates} update${this.updates === 1 ? '' : 's'}`;
    this.element.querySelector('.cursor').textContent = cursor;
    this.element.querySelector('.updated-at').textContent = clock(now);
    return first ? `${photos.length} photos` : changed.map((photo) => `“${photo.title}”`).join(', ') || 'no visible change';
  }
}

function tile(photo, changed) {
  const item = document.createElement('li');
  item.dataset.id = photo.id;
  if (changed) item.className = 'changed';
  const image = document.createElement('img');
  image.src = imageURL(photo.thumbnail);
  image.alt = '';
  const title = document.createElement('span');
  title.className = 'title';
  title.textContent = photo.title;
  item.append(image, title);
  return item;
}

// The demo data names its images at http://localhost:3001 (what `make run` serves); images
// under /images/ are lookout's own, so show them from the API this page talks to.
function imageURL(thumbnail) {
  const url = new URL(thumbnail, api);
  return url.pathname.startsWith('/images/') ? `${api}${url.pathname}` : url.href;
}

// -- Live through EventSource -------------------------------------------------------------

/**
 * Keeps `view` live through one EventSource. The browser reconnects by itself after a
 * dropped connection (sending the last event's id as Last-Event-ID); a stream the server
 * ends (`event: end`) or refuses is reopened here, with `since=` the last cursor.
 */
function runStream(view) {
  let cursor = '';
  let delay = 1000;

  async function open() {
    if (tokenExpired()) await signIn();
    const url = new URL(api + viewPath);
    // EventSource cannot send headers: the token goes in the query, as lookout allows for streams.
    url.searchParams.set('access_token', token);
    if (cursor) url.searchParams.set('since', cursor);
    const source = new EventSource(url);
    view.setState('connecting', 'connecting');

    source.onopen = () => {
      delay = 1000;
      view.setState('live', 'live · pushed by the server');
    };
    source.onmessage = (event) => {
      cursor = event.lastEventId;
      const what = view.render(JSON.parse(event.data), cursor);
      log(`EventSource: ${what} (cursor ${cursor}).`);
    };
    source.addEventListener('end', (event) => {
      source.close();
      const { reason } = JSON.parse(event.data);
      log(`EventSource: the server ended the stream (${reason}).`);
      if (reason.startsWith('token') || reason === 'invalid_token') token = null;
      reopen(`ended: ${reason}`);
    });
    source.onerror = () => {
      if (source.readyState === EventSource.CLOSED) {
        // Refused before it started: an error status, or no CORS headers for this origin.
        log('EventSource: the stream could not be opened.');
        reopen('could not open the stream');
      } else {
        view.setState('reconnecting', 'connection lost · the browser reconnects');
      }
    };
  }

  async function reopen(why) {
    view.setState('retrying', `${why} · again in ${delay / 1000} s`);
    await sleep(delay);
    delay = Math.min(delay * 2, longestDelay);
    open();
  }

  open();
}

// -- Live through a long-poll loop --------------------------------------------------------

/**
 * Keeps `view` live with a loop of GETs: the first answers at once, each next one sends
 * the last ETag in If-None-Match with ?wait=30 and is held until something it read
 * changes (200, a new rendering) or the wait ends (304, nothing changed: ask again).
 */
async function runPoll(view) {
  let etag = '';
  let delay = 1000;
  for (;;) {
    try {
      if (tokenExpired()) await signIn();
      const headers = { Authorization: `Bearer ${token}` };
      if (etag) headers['If-None-Match'] = etag;
      if (view.updates > 0) view.setState('live', 'live · held until a change');
      const response = await fetch(api + viewPath + (etag ? '&wait=30' : ''), { headers, cache: 'no-store' });
      if (response.status === 401) token = null;
      if (response.status === 304) {
        etag = response.headers.get('ETag') || etag;
        continue;
      }
      if (!response.ok) throw new Error(`the API answered ${response.status} ${await errorCode(response)}`);
      const tag = response.headers.get('ETag');
      // Without a readable ETag the loop could not wait; lookout exposes it through CORS.
      if (!tag) throw new Error('no ETag in the answer (is it in Access-Control-Expose-Headers?)');
      const photos = await response.json();
      etag = tag;
      delay = 1000;
      const cursor = tag.replace(/^W\//, '').replace(/"/g, '');
      const what = view.render(photos, cursor);
      view.setState('live', 'live · held until a change');
      log(`Long-poll: ${what} (cursor ${cursor}).`);
    } catch (error) {
      view.setState('retrying', `${explain(error)} · again in ${delay / 1000} s`);
      log(`Long-poll: ${explain(error)}`);
      await sleep(delay);
      delay = Math.min(delay * 2, longestDelay);
    }
  }
}

// -- Small things -------------------------------------------------------------------------

function explain(error) {
  // fetch rejects with a TypeError, and tells nothing more, both when the server cannot be
  // reached and when the browser withholds an answer that lacks CORS headers for this origin.
  if (error instanceof TypeError) {
    return `The browser could not read the API at ${api}: it is down, or this page's origin ${location.origin} is not in its --cors-origins.`;
  }
  return `${error.message}.`;
}

async function errorCode(response) {
  try {
    const body = await response.json();
    return body.error?.code ?? body.error ?? '';
  } catch {
    return '';
  }
}

function log(text) {
  const entry = document.createElement('li');
  const time = document.createElement('time');
  time.textContent = clock(new Date());
  entry.append(time, ` ${text}`);
  const list = document.getElementById('log');
  list.prepend(entry);
  while (list.children.length > 30) list.lastElementChild.remove();
}

function clock(date) {
  return date.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit', second: '2-digit', hour12: false });
}

function sleep(milliseconds) {
  return new Promise((resolve) => setTimeout(resolve, milliseconds));
}

async function main() {
  document.getElementById('page-origin').textContent = location.origin;
  document.getElementById('api-base').textContent = api;
  const stream = new GalleryView(document.getElementById('view-sse'));
  const poll = new GalleryView(document.getElementById('view-poll'));
  await signIn();
  runStream(stream);
  runPoll(poll);
}

main();
