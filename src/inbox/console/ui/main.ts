import './style.css';
import { CHARTED_EVENT_TYPES, MAIL_LISTED_EVENT_TYPES as LIVE_EVENTS, SDK_EVENT_TYPES } from '../../core/events.js';

/**
 * The inbox console (issue 30): sign in with an API key, then the inboxes the key may see, their
 * threads (search, paging) and a thread's messages. It calls the ordinary `/v0` API with the
 * session cookie and the CSRF token kept here in memory; the key itself is sent once, at sign-in,
 * and never kept (not in a variable, not in storage, not in the page).
 */

type Json = Record<string, unknown>;

interface Session {
  csrf_token: string;
  expires_at: string;
  organization_id: string;
  pod_id?: string;
  inbox_id?: string;
}

let session: Session | undefined;
/** What the person looks at, so that live events refresh the right panes. */
const shown: { inboxId?: string; threadId?: string; query: string } = { query: '' };
let live: WebSocket | undefined;
const app = document.getElementById('app') as HTMLElement;

/** An element with attributes (`on*` functions become listeners) and children. */
function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Record<string, unknown> = {},
  ...children: (Node | string | undefined | false)[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === false) continue;
    if (name.startsWith('on') && typeof value === 'function')
      el.addEventListener(name.slice(2), value as EventListener);
    else el.setAttribute(name, value === true ? '' : String(value));
  }
  for (const child of children) if (child !== undefined && child !== false) el.append(child);
  return el;
}

class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** A request to the service with the session's cookie and CSRF token; the API's error message on failure. */
async function api(method: string, path: string, body?: unknown): Promise<Json> {
  const response = await fetch(path, {
    method,
    credentials: 'same-origin',
    headers: {
      ...(session ? { 'x-csrf-token': session.csrf_token } : {}),
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await response.text();
  const json = text ? (JSON.parse(text) as Json) : {};
  if (!response.ok) {
    const error = (json.error ?? {}) as { message?: string };
    if (response.status === 401 && path.startsWith('/v0/')) {
      session = undefined;
      renderSignIn('Your session has ended. Sign in again.');
    }
    throw new ApiError(response.status, error.message ?? `${response.status} ${response.statusText}`);
  }
  return json;
}

/** The same for an answer that is text (a zone file). */
async function apiText(method: string, path: string): Promise<string> {
  const response = await fetch(path, {
    method,
    credentials: 'same-origin',
    headers: session ? { 'x-csrf-token': session.csrf_token } : {},
  });
  const text = await response.text();
  if (!response.ok)
    throw new ApiError(response.status, (JSON.parse(text) as { error?: { message?: string } }).error?.message ?? text);
  return text;
}

function status(message: string, kind: 'info' | 'error' = 'info'): HTMLElement {
  return h('p', { class: `status ${kind}`, role: kind === 'error' ? 'alert' : 'status' }, message);
}

function renderSignIn(notice?: string): void {
  const key = h('input', {
    id: 'api-key',
    name: 'api-key',
    type: 'password',
    autocomplete: 'off',
    spellcheck: 'false',
    required: true,
    placeholder: 'am_…',
  });
  const message = h('div', { id: 'sign-in-message' }, notice ? status(notice) : undefined);
  const form = h(
    'form',
    {
      class: 'sign-in',
      'aria-labelledby': 'sign-in-title',
      onsubmit: async (event: Event) => {
        event.preventDefault();
        const value = key.value;
        // The key leaves the page with this request and is not kept anywhere.
        key.value = '';
        try {
          session = (await api('POST', '/console/session', { api_key: value })) as unknown as Session;
          await renderConsole();
        } catch (err) {
          message.replaceChildren(status((err as Error).message, 'error'));
          key.focus();
        }
      },
    },
    h('h1', { id: 'sign-in-title' }, 'Inbox console'),
    h('label', { for: 'api-key' }, 'API key'),
    key,
    h('button', { type: 'submit' }, 'Sign in'),
    message,
  );
  app.replaceChildren(form);
  key.focus();
}

async function signOut(): Promise<void> {
  await api('DELETE', '/console/session').catch(() => undefined);
  session = undefined;
  live?.close();
  live = undefined;
  renderSignIn('Signed out.');
}

const views = {
  inboxes: h('nav', { class: 'inboxes', 'aria-label': 'Inboxes' }),
  threads: h('section', { class: 'threads', 'aria-label': 'Threads' }),
  thread: h('article', { class: 'thread', 'aria-label': 'Thread' }),
};

async function renderConsole(): Promise<void> {
  if (!session) return renderSignIn();
  const scope = session.inbox_id
    ? `inbox ${session.inbox_id}`
    : session.pod_id
      ? `pod ${session.pod_id}`
      : `organization ${session.organization_id}`;
  app.replaceChildren(
    h(
      'header',
      { class: 'bar' },
      h('h1', { class: 'title' }, 'Inbox console'),
      h('span', { class: 'scope' }, `Signed in for ${scope}`),
      h('span', { id: 'live', class: 'live', title: 'Live updates' }, 'offline'),
      h(
        'nav',
        { class: 'tabs', 'aria-label': 'Sections' },
        h('a', { href: '#/mail', id: 'mail-tab' }, 'Mail'),
        h('a', { href: '#/drafts', id: 'drafts-tab' }, 'Drafts to review'),
        h('a', { href: '#/domains', id: 'domains-tab' }, 'Domains'),
        h('a', { href: '#/charts', id: 'charts-tab' }, 'Charts'),
        h('a', { href: '#/webhooks', id: 'webhooks-tab' }, 'Webhooks'),
        h('a', { href: '#/lists', id: 'lists-tab' }, 'Allow & block'),
        h('a', { href: '#/pods', id: 'pods-tab' }, 'Pods'),
        h('a', { href: '#/keys', id: 'keys-tab' }, 'API keys'),
      ),
      h('button', { type: 'button', id: 'sign-out', onclick: () => void signOut() }, 'Sign out'),
    ),
    h('div', { class: 'panes' }),
  );
  connectLive();
  await route();
}

/** The section the address names (`#/mail`, `#/drafts`, `#/domains/<domain>`, `#/keys`): links and the back button work. */
async function route(): Promise<void> {
  if (!session || !app.querySelector('.bar')) return;
  const [section = 'mail', id] = location.hash.replace(/^#\/?/, '').split('/');
  for (const tab of app.querySelectorAll('.tabs a')) {
    if (tab.getAttribute('href') === `#/${section}`) tab.setAttribute('aria-current', 'page');
    else tab.removeAttribute('aria-current');
  }
  if (section === 'drafts') return renderDrafts();
  if (section === 'domains') return renderDomains(id === undefined ? undefined : decodeURIComponent(id));
  if (section === 'keys') return renderKeys();
  if (section === 'webhooks') return renderWebhooks(id);
  if (section === 'lists') return renderLists();
  if (section === 'pods') return renderPods();
  if (section === 'charts') return renderCharts(id === undefined ? undefined : decodeURIComponent(id));
  setPanes(h('div', { class: 'panes' }, views.inboxes, views.threads, views.thread));
  await loadInboxes();
}

window.addEventListener('hashchange', () => void route());

/** Replaces the panes under the bar. */
function setPanes(panes: HTMLElement): void {
  app.querySelector('.panes')?.replaceWith(panes);
}

/** Text to the clipboard, with a word on the button that did it. */
function copyButton(text: string, label: string): HTMLButtonElement {
  const button = h('button', { type: 'button', class: 'copy', 'aria-label': label }, 'Copy');
  button.addEventListener('click', () => {
    void navigator.clipboard.writeText(text).then(
      () => (button.textContent = 'Copied'),
      () => (button.textContent = 'Copy failed'),
    );
  });
  return button;
}

/**
 * Live updates: the service's WebSocket feed (`/v0`), authenticated by the session cookie the
 * browser sends with the handshake. A message received or sent in the inbox on screen refreshes
 * its threads (and the thread on screen); the connection comes back after a pause when it drops.
 */
function connectLive(attempt = 0): void {
  if (!session || live) return;
  const socket = new WebSocket(`${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/v0`);
  live = socket;
  const mark = (text: string) => {
    const el = document.getElementById('live');
    if (el) el.textContent = text;
  };
  socket.addEventListener('open', () => {
    socket.send(JSON.stringify({ type: 'subscribe', event_types: LIVE_EVENTS }));
  });
  socket.addEventListener('message', (event) => {
    const frame = JSON.parse(String(event.data)) as { type?: string; event_type?: string; message?: Json };
    if (frame.type === 'subscribed') return void mark('live');
    const inboxId = frame.message?.inbox_id;
    if (frame.event_type && inboxId !== undefined && inboxId === shown.inboxId) {
      void loadThreads(shown.inboxId, shown.query);
      if (shown.threadId && frame.message?.thread_id === shown.threadId) void loadThread(shown.inboxId, shown.threadId);
    }
  });
  socket.addEventListener('close', () => {
    mark('offline');
    if (live === socket) live = undefined;
    if (session) setTimeout(() => connectLive(attempt + 1), Math.min(30_000, 1000 * 2 ** attempt));
  });
}

async function loadInboxes(): Promise<void> {
  views.inboxes.replaceChildren(h('h2', {}, 'Inboxes'), status('Loading…'));
  try {
    const page = await api('GET', '/v0/inboxes?limit=100');
    const inboxes = page.inboxes as { inbox_id: string; display_name?: string }[];
    const list = h('ul', {});
    for (const inbox of inboxes)
      list.append(
        h(
          'li',
          {},
          h(
            'button',
            {
              type: 'button',
              class: 'inbox',
              'data-inbox': inbox.inbox_id,
              onclick: () => void loadThreads(inbox.inbox_id),
            },
            inbox.display_name ? `${inbox.display_name} ` : '',
            h('span', { class: 'address' }, inbox.inbox_id),
          ),
        ),
      );
    const username = h('input', { id: 'new-inbox', name: 'username', placeholder: 'username (optional)' });
    const message = h('div', { role: 'status' });
    const create = h(
      'form',
      {
        class: 'add-inbox',
        onsubmit: async (event: Event) => {
          event.preventDefault();
          try {
            const made = await api(
              'POST',
              '/v0/inboxes',
              username.value.trim() ? { username: username.value.trim() } : {},
            );
            await loadInboxes();
            await loadThreads(made.inbox_id as string);
          } catch (err) {
            message.replaceChildren(status((err as Error).message, 'error'));
          }
        },
      },
      h('label', { for: 'new-inbox' }, 'New inbox'),
      username,
      h('button', { type: 'submit' }, 'Create'),
      message,
    );
    views.inboxes.replaceChildren(h('h2', {}, 'Inboxes'), inboxes.length ? list : status('No inboxes yet.'), create);
  } catch (err) {
    views.inboxes.replaceChildren(h('h2', {}, 'Inboxes'), status((err as Error).message, 'error'));
  }
}

async function loadThreads(inboxId: string, query = '', pageToken?: string): Promise<void> {
  if (shown.inboxId !== inboxId) shown.threadId = undefined;
  shown.inboxId = inboxId;
  shown.query = query;
  const search = h('input', { type: 'search', name: 'q', 'aria-label': 'Search threads', value: query });
  const form = h(
    'form',
    {
      role: 'search',
      onsubmit: (event: Event) => {
        event.preventDefault();
        void loadThreads(inboxId, search.value.trim());
      },
    },
    search,
    h('button', { type: 'submit' }, 'Search'),
  );
  views.threads.replaceChildren(h('h2', {}, inboxId), form, status('Loading…'));
  const params = new URLSearchParams({ limit: '25', ...(pageToken ? { page_token: pageToken } : {}) });
  if (query) params.set('q', query);
  const base = `/v0/inboxes/${encodeURIComponent(inboxId)}/threads${query ? '/search' : ''}`;
  try {
    const page = await api('GET', `${base}?${params}`);
    const threads = page.threads as {
      thread_id: string;
      subject?: string;
      senders: string[];
      preview?: string;
      timestamp: string;
      labels: string[];
    }[];
    const list = h('ul', {});
    for (const t of threads)
      list.append(
        h(
          'li',
          {},
          h(
            'button',
            {
              type: 'button',
              class: 'thread-item',
              'data-thread': t.thread_id,
              onclick: () => void loadThread(inboxId, t.thread_id),
            },
            h('span', { class: 'subject' }, t.subject ?? '(no subject)'),
            h('span', { class: 'senders' }, t.senders.join(', ')),
            h('time', { datetime: t.timestamp }, new Date(t.timestamp).toLocaleString()),
            t.labels.includes('unread') && h('span', { class: 'label' }, 'unread'),
          ),
        ),
      );
    const next = page.next_page_token as string | undefined;
    const composeSlot = h('div', {});
    const compose = h(
      'button',
      {
        type: 'button',
        id: 'compose',
        onclick: () =>
          composeSlot.replaceChildren(
            composer(
              'New message',
              { to: true, cc: true, subject: true },
              (m) => api('POST', `/v0/inboxes/${encodeURIComponent(inboxId)}/messages/send`, m),
              () => void loadThreads(inboxId, query),
            ),
          ),
      },
      'Compose',
    );
    const settings = h(
      'details',
      { class: 'inbox-settings' },
      h('summary', {}, 'Inbox settings'),
      inboxSettings(inboxId, () => void loadInboxes()),
    );
    views.threads.replaceChildren(
      h('h2', {}, inboxId),
      compose,
      settings,
      composeSlot,
      form,
      threads.length ? list : status(query ? 'No thread matches.' : 'No threads yet.'),
      ...(next
        ? [
            h(
              'button',
              { type: 'button', class: 'older', onclick: () => void loadThreads(inboxId, query, next) },
              'Older',
            ),
          ]
        : []),
    );
  } catch (err) {
    views.threads.replaceChildren(h('h2', {}, inboxId), form, status((err as Error).message, 'error'));
  }
}

const addressList = (value: string) =>
  value
    .split(',')
    .map((a) => a.trim())
    .filter(Boolean);

/**
 * A form that writes mail: a new message, a reply, a reply to all, or a forward. `fields` says
 * which of to, cc and subject it asks for; `send` gets what was typed and makes the API call.
 */
function composer(
  title: string,
  fields: { to?: boolean; cc?: boolean; subject?: boolean },
  send: (input: { to: string[]; cc: string[]; subject: string; text: string }) => Promise<unknown>,
  done: () => void,
): HTMLFormElement {
  const id = title.toLowerCase().replace(/\W+/g, '-');
  const input = (name: string, label: string, tag: 'input' | 'textarea' = 'input') => {
    const el = h(tag, { id: `${id}-${name}`, name });
    return { el, nodes: [h('label', { for: `${id}-${name}` }, label), el] };
  };
  const to = input('to', 'To');
  const cc = input('cc', 'Cc');
  const subject = input('subject', 'Subject');
  const text = input('text', 'Text', 'textarea');
  const message = h('div', { role: 'status' });
  const form = h(
    'form',
    {
      class: 'composer',
      'aria-label': title,
      onsubmit: async (event: Event) => {
        event.preventDefault();
        try {
          await send({
            to: addressList(to.el.value),
            cc: addressList(cc.el.value),
            subject: subject.el.value,
            text: text.el.value,
          });
          done();
        } catch (err) {
          message.replaceChildren(status((err as Error).message, 'error'));
        }
      },
    },
    h('h3', {}, title),
    ...(fields.to ? to.nodes : []),
    ...(fields.cc ? cc.nodes : []),
    ...(fields.subject ? subject.nodes : []),
    ...text.nodes,
    h(
      'div',
      { class: 'actions' },
      h('button', { type: 'submit' }, 'Send'),
      h('button', { type: 'button', onclick: () => form.remove() }, 'Cancel'),
    ),
    message,
  );
  return form;
}

/**
 * The HTML without anything it would fetch from elsewhere (image sources, backgrounds, style
 * URLs, stylesheets): parsed in an inert document, which itself loads nothing.
 */
function withoutRemoteContent(html: string): string {
  const doc = new DOMParser().parseFromString(html, 'text/html');
  const local = (value: string) => /^\s*(data:|cid:|#)/i.test(value);
  for (const el of doc.querySelectorAll('[src], [srcset], [background], [poster], link[href]')) {
    for (const attr of ['src', 'srcset', 'background', 'poster', ...(el.tagName === 'LINK' ? ['href'] : [])]) {
      const value = el.getAttribute(attr);
      if (value !== null && !local(value)) el.removeAttribute(attr);
    }
  }
  const noUrls = (css: string) => css.replace(/url\s*\([^)]*\)/gi, 'none').replace(/@import[^;]*;?/gi, '');
  for (const el of doc.querySelectorAll('[style]')) el.setAttribute('style', noUrls(el.getAttribute('style') ?? ''));
  for (const el of doc.querySelectorAll('style')) el.textContent = noUrls(el.textContent ?? '');
  return doc.documentElement.outerHTML;
}

/**
 * A message's HTML in a frame of its own: sandboxed (no scripts, no same origin, no forms), and
 * under a policy of its own that blocks remote images until the person asks for them; until then
 * the HTML also goes in without what it would fetch.
 */
function htmlFrame(html: string, remoteImages: boolean): HTMLIFrameElement {
  const images = remoteImages ? 'data: https: http:' : 'data:';
  const policy = `default-src 'none'; style-src 'unsafe-inline'; img-src ${images}; font-src data:`;
  const frame = h('iframe', {
    sandbox: '',
    title: 'Message (HTML)',
    class: 'html-body',
    referrerpolicy: 'no-referrer',
  });
  const body = remoteImages ? html : withoutRemoteContent(html);
  frame.srcdoc = `<!DOCTYPE html><meta http-equiv="Content-Security-Policy" content="${policy}"><base target="_blank">${body}`;
  return frame;
}

async function loadThread(inboxId: string, threadId: string): Promise<void> {
  shown.threadId = threadId;
  views.thread.replaceChildren(status('Loading…'));
  try {
    const thread = await api(
      'GET',
      `/v0/inboxes/${encodeURIComponent(inboxId)}/threads/${encodeURIComponent(threadId)}`,
    );
    const messages = thread.messages as {
      message_id: string;
      from: string;
      to: string[];
      subject?: string;
      timestamp: string;
      labels: string[];
      text?: string;
      html?: string;
      attachments?: { attachment_id: string; filename?: string; size: number }[];
    }[];
    views.thread.replaceChildren(
      h('h2', {}, (thread.subject as string | undefined) ?? '(no subject)'),
      ...messages.map((m) => {
        const body = h('div', { class: 'body' });
        if (m.html) {
          const show = h('button', { type: 'button', class: 'remote-images' }, 'Show remote images');
          show.addEventListener('click', () => {
            body.replaceChildren(htmlFrame(m.html as string, true));
          });
          body.append(htmlFrame(m.html, false), show);
        } else body.append(h('pre', { class: 'text-body' }, m.text ?? ''));
        const base = `/v0/inboxes/${encodeURIComponent(inboxId)}/messages/${encodeURIComponent(m.message_id)}`;
        return h(
          'section',
          { class: 'message', 'aria-label': `Message from ${m.from}` },
          h(
            'p',
            { class: 'meta' },
            h('strong', {}, m.from),
            ` → ${m.to.join(', ')} · `,
            h('time', { datetime: m.timestamp }, new Date(m.timestamp).toLocaleString()),
          ),
          labelEditor(base, m.labels, () => void loadThread(inboxId, threadId)),
          body,
          m.html && m.text
            ? h('details', {}, h('summary', {}, 'Text'), h('pre', { class: 'text-body' }, m.text))
            : undefined,
          m.attachments?.length
            ? h(
                'ul',
                { class: 'attachments' },
                ...m.attachments.map((a) =>
                  h(
                    'li',
                    {},
                    h(
                      'button',
                      {
                        type: 'button',
                        onclick: async () => {
                          const link = await api('GET', `${base}/attachments/${encodeURIComponent(a.attachment_id)}`);
                          window.location.assign(link.download_url as string);
                        },
                      },
                      `${a.filename ?? a.attachment_id} (${a.size} bytes)`,
                    ),
                  ),
                ),
              )
            : undefined,
          h(
            'button',
            {
              type: 'button',
              class: 'raw',
              onclick: async () => {
                const link = await api('GET', `${base}/raw`);
                window.location.assign(link.download_url as string);
              },
            },
            'Source',
          ),
          answers(base, () => void loadThread(inboxId, threadId)),
        );
      }),
    );
  } catch (err) {
    views.thread.replaceChildren(status((err as Error).message, 'error'));
  }
}

/** A message's labels, each removable, and a field to add one (system labels answer the API's error). */
function labelEditor(base: string, labels: string[], changed: () => void): HTMLElement {
  const message = h('span', { role: 'status' });
  const change = async (body: Json) => {
    try {
      await api('PATCH', base, body);
      changed();
    } catch (err) {
      message.replaceChildren(status((err as Error).message, 'error'));
    }
  };
  const add = h('input', { name: 'label', 'aria-label': 'Add a label', placeholder: 'add label', size: 10 });
  return h(
    'div',
    { class: 'labels' },
    ...labels.map((l) =>
      h(
        'span',
        { class: 'label' },
        l,
        h(
          'button',
          {
            type: 'button',
            class: 'remove-label',
            'aria-label': `Remove label ${l}`,
            onclick: () => void change({ remove_labels: [l] }),
          },
          '×',
        ),
      ),
    ),
    h(
      'form',
      {
        class: 'add-label',
        onsubmit: (event: Event) => {
          event.preventDefault();
          if (add.value.trim()) void change({ add_labels: [add.value.trim()] });
        },
      },
      add,
    ),
    message,
  );
}

/** Reply, reply all and forward of a message, each in a composer below it. */
function answers(base: string, done: () => void): HTMLElement {
  const slot = h('div', {});
  const open = (title: string, fields: { to?: boolean; cc?: boolean }, path: string) =>
    slot.replaceChildren(
      composer(
        title,
        fields,
        (m) =>
          api('POST', `${base}/${path}`, {
            text: m.text,
            ...(fields.to ? { to: m.to } : {}),
            ...(fields.cc && m.cc.length ? { cc: m.cc } : {}),
          }),
        done,
      ),
    );
  return h(
    'div',
    { class: 'answers' },
    h('button', { type: 'button', class: 'reply', onclick: () => open('Reply', {}, 'reply') }, 'Reply'),
    h('button', { type: 'button', class: 'reply-all', onclick: () => open('Reply all', {}, 'reply-all') }, 'Reply all'),
    h(
      'button',
      { type: 'button', class: 'forward', onclick: () => open('Forward', { to: true, cc: true }, 'forward') },
      'Forward',
    ),
    slot,
  );
}

interface DraftItem {
  inbox_id: string;
  draft_id: string;
  to?: string[];
  subject?: string;
  preview?: string;
  send_status?: string;
  send_at?: string;
  updated_at: string;
}

/** `datetime-local`'s value for an ISO time, in the browser's zone. */
function localInput(iso: string | undefined): string {
  if (!iso) return '';
  const d = new Date(iso);
  return new Date(d.getTime() - d.getTimezoneOffset() * 60_000).toISOString().slice(0, 16);
}

/**
 * Human in the loop: every draft the key sees, newest first, scheduled ones with their time. A
 * person reads one, edits it, sends it now, schedules it or discards it. Keyboard: j / k move,
 * Enter opens, and in a draft Ctrl+Enter sends, Ctrl+S saves, Escape goes back to the list.
 */
async function renderDrafts(selected = 0): Promise<void> {
  if (!session) return renderSignIn();
  const queue = h('section', { class: 'drafts', 'aria-label': 'Drafts to review' }, h('h2', {}, 'Drafts to review'));
  const editor = h('article', { class: 'draft-editor', 'aria-label': 'Draft' });
  setPanes(h('div', { class: 'panes review' }, queue, editor));
  queue.append(status('Loading…'));
  let drafts: DraftItem[] = [];
  try {
    drafts = (await api('GET', '/v0/drafts?limit=100')).drafts as DraftItem[];
  } catch (err) {
    queue.replaceChildren(h('h2', {}, 'Drafts to review'), status((err as Error).message, 'error'));
    return;
  }
  const items = drafts.map((d, i) =>
    h(
      'button',
      {
        type: 'button',
        class: 'draft-item',
        'data-draft': d.draft_id,
        'aria-current': i === selected ? 'true' : false,
        onclick: () => void openDraft(d),
      },
      h('span', { class: 'subject' }, d.subject ?? '(no subject)'),
      h('span', { class: 'senders' }, `${d.inbox_id} → ${(d.to ?? []).join(', ') || '(no recipient)'}`),
      d.send_at
        ? h('span', { class: 'label scheduled' }, `scheduled ${new Date(d.send_at).toLocaleString()}`)
        : h('time', { datetime: d.updated_at }, new Date(d.updated_at).toLocaleString()),
    ),
  );
  queue.replaceChildren(
    h('h2', {}, `Drafts to review (${drafts.length})`),
    drafts.length ? h('ul', {}, ...items.map((b) => h('li', {}, b))) : status('Nothing to review.'),
  );
  let index = Math.min(selected, Math.max(0, items.length - 1));
  items[index]?.focus();
  queue.addEventListener('keydown', (event) => {
    if (event.key !== 'j' && event.key !== 'k') return;
    event.preventDefault();
    index = Math.max(0, Math.min(items.length - 1, index + (event.key === 'j' ? 1 : -1)));
    items.forEach((b, i) => (i === index ? b.setAttribute('aria-current', 'true') : b.removeAttribute('aria-current')));
    items[index]?.focus();
  });

  async function openDraft(item: DraftItem): Promise<void> {
    const base = `/v0/inboxes/${encodeURIComponent(item.inbox_id)}/drafts/${encodeURIComponent(item.draft_id)}`;
    const d = (await api('GET', base)) as Json;
    const field = (name: string, label: string, value: string, tag: 'input' | 'textarea' = 'input') => {
      const el = h(tag, { id: `draft-${name}`, name });
      el.value = value;
      return [h('label', { for: `draft-${name}` }, label), el] as const;
    };
    const [toLabel, to] = field('to', 'To', ((d.to as string[] | undefined) ?? []).join(', '));
    const [ccLabel, cc] = field('cc', 'Cc', ((d.cc as string[] | undefined) ?? []).join(', '));
    const [subjectLabel, subject] = field('subject', 'Subject', (d.subject as string | undefined) ?? '');
    const [textLabel, text] = field('text', 'Text', (d.text as string | undefined) ?? '', 'textarea');
    const [whenLabel, when] = field('send-at', 'Send at', localInput(d.send_at as string | undefined));
    when.setAttribute('type', 'datetime-local');
    const message = h('div', { role: 'status' });
    const list = (v: string) =>
      v
        .split(',')
        .map((a) => a.trim())
        .filter(Boolean);
    const changes = () => ({
      to: list(to.value),
      cc: list(cc.value),
      subject: subject.value,
      text: text.value,
    });
    const act = async (what: string, run: () => Promise<unknown>) => {
      try {
        await run();
        await renderDrafts(index);
        document.getElementById('review-message')?.replaceChildren(status(what));
      } catch (err) {
        message.replaceChildren(status((err as Error).message, 'error'));
      }
    };
    const save = () => act('Saved.', () => api('PATCH', base, changes()));
    const sendNow = () =>
      act('Sent.', async () => {
        await api('PATCH', base, changes());
        await api('POST', `${base}/send`, {});
      });
    const schedule = () =>
      act('Scheduled.', () =>
        api('PATCH', base, { ...changes(), send_at: when.value ? new Date(when.value).toISOString() : null }),
      );
    const discard = () => {
      if (window.confirm('Discard this draft?')) void act('Discarded.', () => api('DELETE', base));
    };
    const form = h(
      'form',
      {
        class: 'draft-form',
        onsubmit: (event: Event) => {
          event.preventDefault();
          void sendNow();
        },
        onkeydown: (event: KeyboardEvent) => {
          if ((event.ctrlKey || event.metaKey) && event.key === 'Enter') {
            event.preventDefault();
            void sendNow();
          } else if ((event.ctrlKey || event.metaKey) && event.key === 's') {
            event.preventDefault();
            void save();
          } else if (event.key === 'Escape') items[index]?.focus();
        },
      },
      h('p', { class: 'meta' }, `From ${item.inbox_id}`),
      toLabel,
      to,
      ccLabel,
      cc,
      subjectLabel,
      subject,
      textLabel,
      text,
      whenLabel,
      when,
      h(
        'div',
        { class: 'actions' },
        h('button', { type: 'submit', id: 'send-now' }, 'Send now'),
        h('button', { type: 'button', id: 'save', onclick: () => void save() }, 'Save'),
        h('button', { type: 'button', id: 'schedule', onclick: () => void schedule() }, 'Schedule'),
        h('button', { type: 'button', id: 'discard', onclick: discard }, 'Discard'),
      ),
      message,
    );
    editor.replaceChildren(h('h2', {}, (d.subject as string | undefined) ?? '(no subject)'), form);
    text.focus();
  }
  editor.replaceChildren(h('div', { id: 'review-message' }));
}

/** An inbox's display name and whether it may send (paused: it still receives). */
function inboxSettings(inboxId: string, changed: () => void): HTMLElement {
  const base = `/v0/inboxes/${encodeURIComponent(inboxId)}`;
  const name = h('input', { id: 'inbox-display-name', name: 'display_name' });
  const paused = h('input', { id: 'inbox-paused', name: 'paused', type: 'checkbox' });
  const message = h('div', { role: 'status' });
  const form = h(
    'form',
    {
      class: 'inbox-form',
      onsubmit: async (event: Event) => {
        event.preventDefault();
        try {
          await api('PATCH', base, {
            display_name: name.value.trim() || null,
            status: paused.checked ? 'paused' : 'active',
          });
          message.replaceChildren(status('Saved.'));
          changed();
        } catch (err) {
          message.replaceChildren(status((err as Error).message, 'error'));
        }
      },
    },
    h('label', { for: 'inbox-display-name' }, 'Display name'),
    name,
    h('label', {}, paused, ' Paused (refuses sends, still receives)'),
    h('button', { type: 'submit' }, 'Save inbox'),
    message,
  );
  void api('GET', base).then((inbox) => {
    name.value = (inbox.display_name as string | undefined) ?? '';
    paused.checked = inbox.status === 'paused';
  });
  return form;
}

interface WebhookItem {
  webhook_id: string;
  url: string;
  event_types?: string[];
  inbox_ids?: string[];
  enabled: boolean;
  disabled_reason?: string;
}

/** Webhooks: create (URL, event types, inboxes), enable and disable, delete, and each one's recent deliveries. */
async function renderWebhooks(selected?: string): Promise<void> {
  const list = h(
    'section',
    { class: 'webhooks', 'aria-label': 'Webhooks' },
    h('h2', {}, 'Webhooks'),
    status('Loading…'),
  );
  const detail = h('article', { class: 'webhook', 'aria-label': 'Webhook' });
  setPanes(h('div', { class: 'panes review' }, list, detail));
  const url = h('input', { id: 'webhook-url', name: 'url', type: 'url', required: true, placeholder: 'https://…' });
  const inboxes = h('input', {
    id: 'webhook-inboxes',
    name: 'inboxes',
    placeholder: 'every inbox (or addresses, comma-separated)',
  });
  const types = SDK_EVENT_TYPES.map((t) =>
    h('input', { type: 'checkbox', name: 'event_types', value: t, checked: t === SDK_EVENT_TYPES[0] }),
  );
  const message = h('div', { role: 'status' });
  const create = h(
    'form',
    {
      class: 'add-webhook',
      onsubmit: async (event: Event) => {
        event.preventDefault();
        const chosen = types.filter((t) => t.checked).map((t) => t.value);
        try {
          const made = await api('POST', '/v0/webhooks', {
            url: url.value.trim(),
            event_types: chosen,
            ...(addressList(inboxes.value).length ? { inbox_ids: addressList(inboxes.value) } : {}),
          });
          location.hash = `#/webhooks/${encodeURIComponent(made.webhook_id as string)}`;
        } catch (err) {
          message.replaceChildren(status((err as Error).message, 'error'));
        }
      },
    },
    h('label', { for: 'webhook-url' }, 'Endpoint URL'),
    url,
    h('label', { for: 'webhook-inboxes' }, 'Inboxes'),
    inboxes,
    h(
      'fieldset',
      {},
      h('legend', {}, 'Event types'),
      ...types.map((t) => h('label', { class: 'check' }, t, ` ${t.value}`)),
    ),
    h('button', { type: 'submit' }, 'Create webhook'),
    message,
  );
  let hooks: WebhookItem[] = [];
  try {
    hooks = (await api('GET', '/v0/webhooks?limit=100')).webhooks as WebhookItem[];
    list.replaceChildren(
      h('h2', {}, 'Webhooks'),
      hooks.length
        ? h(
            'ul',
            {},
            ...hooks.map((w) =>
              h(
                'li',
                {},
                h(
                  'a',
                  {
                    href: `#/webhooks/${encodeURIComponent(w.webhook_id)}`,
                    'aria-current': w.webhook_id === selected ? 'true' : false,
                  },
                  w.url,
                  w.enabled ? '' : ' (disabled)',
                ),
              ),
            ),
          )
        : status('No webhooks yet.'),
      create,
    );
  } catch (err) {
    list.replaceChildren(h('h2', {}, 'Webhooks'), status((err as Error).message, 'error'));
    return;
  }
  const hook = hooks.find((w) => w.webhook_id === selected);
  if (!hook) return;
  const base = `/v0/webhooks/${encodeURIComponent(hook.webhook_id)}`;
  const deliveries = h('div', { class: 'deliveries' }, status('Loading deliveries…'));
  const note = h('div', { role: 'status' });
  detail.replaceChildren(
    h('h2', {}, hook.url),
    h(
      'p',
      {},
      `Events: ${(hook.event_types ?? ['all']).join(', ')} · Inboxes: ${(hook.inbox_ids ?? ['all']).join(', ')}`,
    ),
    h(
      'p',
      {},
      'State: ',
      h(
        'strong',
        { id: 'webhook-state' },
        hook.enabled ? 'enabled' : `disabled${hook.disabled_reason ? ` (${hook.disabled_reason})` : ''}`,
      ),
    ),
    h(
      'div',
      { class: 'actions' },
      h(
        'button',
        {
          type: 'button',
          id: 'toggle-webhook',
          onclick: async () => {
            try {
              await api('PATCH', base, { enabled: !hook.enabled });
              await renderWebhooks(hook.webhook_id);
            } catch (err) {
              note.replaceChildren(status((err as Error).message, 'error'));
            }
          },
        },
        hook.enabled ? 'Disable' : 'Enable',
      ),
      h(
        'button',
        {
          type: 'button',
          id: 'test-webhook',
          disabled: !hook.enabled,
          title: hook.enabled ? 'Sends a signed webhook.test event to this endpoint' : 'Enable the webhook first',
          onclick: async () => {
            try {
              const sent = await api('POST', `${base}/test`);
              const eventId = sent.event_id as string;
              note.replaceChildren(status(`Test event ${eventId} queued; waiting for the first attempt…`));
              // The worker sends it in the background: the log shows each attempt once it is made.
              for (let i = 0; i < 30; i++) {
                const found = (await api('GET', `${base}/deliveries?event_id=${encodeURIComponent(eventId)}`))
                  .deliveries as { outcome: string; status_code?: number; error?: string }[];
                const first = found[found.length - 1];
                if (first) {
                  note.replaceChildren(
                    status(
                      `Test event ${eventId}: ${first.outcome}${first.status_code !== undefined ? ` (${first.status_code})` : first.error ? ` (${first.error})` : ''}.`,
                      first.outcome === 'delivered' ? 'info' : 'error',
                    ),
                  );
                  await loadDeliveries();
                  return;
                }
                await new Promise((resolve) => setTimeout(resolve, 500));
              }
              note.replaceChildren(status(`Test event ${eventId} queued; no attempt yet. Reload later.`));
            } catch (err) {
              note.replaceChildren(status((err as Error).message, 'error'));
            }
          },
        },
        'Send test event',
      ),
      h(
        'button',
        {
          type: 'button',
          id: 'delete-webhook',
          onclick: async () => {
            if (!window.confirm('Delete this webhook?')) return;
            try {
              await api('DELETE', base);
              location.hash = '#/webhooks';
            } catch (err) {
              note.replaceChildren(status((err as Error).message, 'error'));
            }
          },
        },
        'Delete',
      ),
    ),
    note,
    h('h3', {}, 'Recent deliveries'),
    deliveries,
  );
  await loadDeliveries();

  /** The delivery log, newest first: status, attempts and response code of each attempt. */
  async function loadDeliveries(): Promise<void> {
    try {
      const rows = (await api('GET', `${base}/deliveries?limit=50`)).deliveries as {
        event_id: string;
        event_type?: string;
        attempt: number;
        outcome: string;
        status_code?: number;
        error?: string;
        created_at: string;
      }[];
      deliveries.replaceChildren(
        rows.length
          ? h(
              'table',
              { class: 'delivery-list' },
              h(
                'thead',
                {},
                h(
                  'tr',
                  {},
                  ...['When', 'Event', 'Attempt', 'Outcome', 'Response'].map((c) => h('th', { scope: 'col' }, c)),
                ),
              ),
              h(
                'tbody',
                {},
                ...rows.map((d) =>
                  h(
                    'tr',
                    {},
                    h('td', {}, new Date(d.created_at).toLocaleString()),
                    h('td', {}, d.event_type ?? d.event_id),
                    h('td', {}, String(d.attempt)),
                    h('td', {}, d.outcome),
                    h('td', {}, d.status_code !== undefined ? String(d.status_code) : (d.error ?? '')),
                  ),
                ),
              ),
            )
          : status('No deliveries yet.'),
      );
    } catch (err) {
      deliveries.replaceChildren(status((err as Error).message, 'error'));
    }
  }
}

const SVG = 'http://www.w3.org/2000/svg';

/** An SVG element with attributes. */
function svg(tag: string, attrs: Record<string, string | number>, ...children: (Node | string)[]): SVGElement {
  const el = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attrs)) el.setAttribute(name, String(value));
  el.append(...children);
  return el;
}

/** Counts per day as bars, with the numbers as a table beside them for those who read rather than look. */
function barChart(title: string, points: { timestamp: string; count: number }[]): HTMLElement {
  const width = 640;
  const height = 160;
  const max = Math.max(1, ...points.map((p) => p.count));
  const bar = width / Math.max(1, points.length);
  const total = points.reduce((sum, p) => sum + p.count, 0);
  const chart = svg(
    'svg',
    {
      viewBox: `0 0 ${width} ${height + 20}`,
      role: 'img',
      'aria-label': `${title}: ${total} in ${points.length} days`,
      class: 'chart',
    },
    ...points.map((p, i) => {
      const h2 = Math.round((p.count / max) * height);
      return svg(
        'rect',
        { x: i * bar + 1, y: height - h2, width: Math.max(1, bar - 2), height: h2, class: 'bar' },
        svg('title', {}, `${p.timestamp.slice(0, 10)}: ${p.count}`),
      );
    }),
    svg('text', { x: 0, y: height + 16, class: 'axis' }, points[0]?.timestamp.slice(0, 10) ?? ''),
    svg(
      'text',
      { x: width, y: height + 16, 'text-anchor': 'end', class: 'axis' },
      points.at(-1)?.timestamp.slice(0, 10) ?? '',
    ),
    svg('text', { x: 0, y: 12, class: 'axis' }, `max ${max}`),
  );
  return h(
    'figure',
    { class: 'chart-figure', 'data-event-type': title },
    h('figcaption', {}, `${title} per day (${total} in all)`),
    chart,
    h(
      'details',
      {},
      h('summary', {}, 'Numbers'),
      h(
        'table',
        {},
        h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Day'), h('th', { scope: 'col' }, 'Count'))),
        h(
          'tbody',
          {},
          ...points.map((p) => h('tr', {}, h('td', {}, p.timestamp.slice(0, 10)), h('td', {}, String(p.count)))),
        ),
      ),
    ),
  );
}

/** Sends, receipts, bounces and complaints per day over 30 days, for the organization, a pod or an inbox. */
async function renderCharts(scope?: string): Promise<void> {
  const section = h(
    'section',
    { class: 'charts', 'aria-label': 'Charts' },
    h('h2', {}, 'Mail per day'),
    status('Loading…'),
  );
  setPanes(h('div', { class: 'panes single' }, section));
  const picker = h(
    'select',
    { id: 'chart-scope', 'aria-label': 'Whose mail' },
    h('option', { value: '' }, 'Everything this key sees'),
  );
  try {
    const inboxes = (await api('GET', '/v0/inboxes?limit=100')).inboxes as { inbox_id: string }[];
    for (const i of inboxes) picker.append(h('option', { value: `inbox:${i.inbox_id}` }, `Inbox ${i.inbox_id}`));
    if (!session?.inbox_id) {
      const pods = ((await api('GET', '/v0/pods?limit=100').catch(() => ({ pods: [] }))).pods ?? []) as {
        pod_id: string;
        name?: string;
      }[];
      for (const p of pods) picker.append(h('option', { value: `pod:${p.pod_id}` }, `Pod ${p.name ?? p.pod_id}`));
    }
  } catch {
    // the organization's charts still work
  }
  picker.value = scope ?? '';
  picker.addEventListener('change', () => (location.hash = `#/charts/${encodeURIComponent(picker.value)}`));
  const [kind, id] = (scope ?? '').split(/:(.*)/s);
  const prefix =
    kind === 'inbox' && id
      ? `/v0/inboxes/${encodeURIComponent(id)}`
      : kind === 'pod' && id
        ? `/v0/pods/${encodeURIComponent(id)}`
        : '/v0';
  const end = new Date();
  const start = new Date(end.getTime() - 30 * 86_400_000);
  const params = new URLSearchParams({
    event_types: JSON.stringify(CHARTED_EVENT_TYPES),
    period: '86400',
    start: start.toISOString(),
    end: end.toISOString(),
  });
  try {
    const series = (await api('GET', `${prefix}/metrics/events?${params}`)) as Record<
      string,
      { timestamp: string; count: number }[]
    >;
    section.replaceChildren(
      h('h2', {}, 'Mail per day'),
      picker,
      ...CHARTED_EVENT_TYPES.map((t) => barChart(t, series[t] ?? [])),
    );
  } catch (err) {
    section.replaceChildren(h('h2', {}, 'Mail per day'), picker, status((err as Error).message, 'error'));
  }
}

/** The organization's allow and block lists, for sending, receiving and replying: entries added and removed. */
async function renderLists(): Promise<void> {
  const section = h(
    'section',
    { class: 'lists', 'aria-label': 'Allow and block lists' },
    h('h2', {}, 'Allow and block lists'),
  );
  setPanes(h('div', { class: 'panes single' }, section));
  const tables = h('div', {});
  const entry = h('input', {
    id: 'list-entry',
    name: 'entry',
    required: true,
    placeholder: 'someone@example.org or example.org',
  });
  const direction = h(
    'select',
    { id: 'list-direction', name: 'direction' },
    ...['receive', 'send', 'reply'].map((d) => h('option', { value: d }, d)),
  );
  const type = h(
    'select',
    { id: 'list-type', name: 'type' },
    ...['block', 'allow'].map((t) => h('option', { value: t }, t)),
  );
  const message = h('div', { role: 'status' });
  const form = h(
    'form',
    {
      class: 'add-entry',
      onsubmit: async (event: Event) => {
        event.preventDefault();
        try {
          await api('POST', `/v0/lists/${direction.value}/${type.value}`, { entry: entry.value.trim() });
          entry.value = '';
          await show();
        } catch (err) {
          message.replaceChildren(status((err as Error).message, 'error'));
        }
      },
    },
    h('label', { for: 'list-entry' }, 'Address or domain'),
    entry,
    h('label', { for: 'list-direction' }, 'When'),
    direction,
    h('label', { for: 'list-type' }, 'List'),
    type,
    h('button', { type: 'submit' }, 'Add entry'),
    message,
  );
  async function show(): Promise<void> {
    const parts: HTMLElement[] = [];
    for (const d of ['receive', 'send', 'reply'])
      for (const t of ['block', 'allow']) {
        try {
          const entries = (await api('GET', `/v0/lists/${d}/${t}?limit=100`)).entries as {
            entry: string;
            reason?: string;
          }[];
          parts.push(
            h(
              'section',
              { class: 'list', 'data-list': `${d}/${t}` },
              h(
                'h3',
                {},
                `${t === 'block' ? 'Blocked' : 'Allowed'} when ${d === 'receive' ? 'receiving' : d === 'send' ? 'sending' : 'replying'}`,
              ),
              entries.length
                ? h(
                    'ul',
                    {},
                    ...entries.map((e) =>
                      h(
                        'li',
                        {},
                        e.entry,
                        ' ',
                        h(
                          'button',
                          {
                            type: 'button',
                            'aria-label': `Remove ${e.entry} from ${d} ${t}`,
                            onclick: async () => {
                              await api('DELETE', `/v0/lists/${d}/${t}/${encodeURIComponent(e.entry)}`);
                              await show();
                            },
                          },
                          'Remove',
                        ),
                      ),
                    ),
                  )
                : status('Empty.'),
            ),
          );
        } catch (err) {
          parts.push(status((err as Error).message, 'error'));
        }
      }
    tables.replaceChildren(...parts);
  }
  section.replaceChildren(h('h2', {}, 'Allow and block lists'), form, tables);
  await show();
}

/** Pods: the groups of inboxes a key may be limited to; create and delete (an empty one). */
async function renderPods(): Promise<void> {
  const section = h('section', { class: 'pods', 'aria-label': 'Pods' }, h('h2', {}, 'Pods'));
  setPanes(h('div', { class: 'panes single' }, section));
  const name = h('input', { id: 'pod-name', name: 'name', required: true });
  const message = h('div', { role: 'status' });
  const list = h('div', {});
  const form = h(
    'form',
    {
      class: 'add-pod',
      onsubmit: async (event: Event) => {
        event.preventDefault();
        try {
          await api('POST', '/v0/pods', { name: name.value.trim() });
          name.value = '';
          await show();
        } catch (err) {
          message.replaceChildren(status((err as Error).message, 'error'));
        }
      },
    },
    h('label', { for: 'pod-name' }, 'New pod'),
    name,
    h('button', { type: 'submit' }, 'Create pod'),
    message,
  );
  async function show(): Promise<void> {
    try {
      const pods = (await api('GET', '/v0/pods?limit=100')).pods as { pod_id: string; name: string }[];
      list.replaceChildren(
        pods.length
          ? h(
              'ul',
              {},
              ...pods.map((p) =>
                h(
                  'li',
                  { 'data-pod': p.pod_id },
                  `${p.name} `,
                  h('code', {}, p.pod_id),
                  ' ',
                  h('a', { href: `#/charts/${encodeURIComponent(`pod:${p.pod_id}`)}` }, 'Charts'),
                  ' ',
                  h(
                    'button',
                    {
                      type: 'button',
                      'aria-label': `Delete pod ${p.name}`,
                      onclick: async () => {
                        if (!window.confirm(`Delete the pod "${p.name}"?`)) return;
                        try {
                          await api('DELETE', `/v0/pods/${encodeURIComponent(p.pod_id)}`);
                          await show();
                        } catch (err) {
                          message.replaceChildren(status((err as Error).message, 'error'));
                        }
                      },
                    },
                    'Delete',
                  ),
                ),
              ),
            )
          : status('No pods.'),
      );
    } catch (err) {
      list.replaceChildren(status((err as Error).message, 'error'));
    }
  }
  section.replaceChildren(h('h2', {}, 'Pods'), form, list);
  await show();
}

interface DomainView {
  domain_id: string;
  domain: string;
  status?: string;
  reason?: string;
  records?: { type: string; name: string; value: string; status: string; priority?: number }[];
}

/** Custom domains: add one, its records to publish (copy buttons, the zone file), verify, status. */
async function renderDomains(selected?: string): Promise<void> {
  const list = h('section', { class: 'domains', 'aria-label': 'Domains' }, h('h2', {}, 'Domains'), status('Loading…'));
  const detail = h('article', { class: 'domain', 'aria-label': 'Domain' });
  setPanes(h('div', { class: 'panes review' }, list, detail));
  const name = h('input', { id: 'new-domain', name: 'domain', placeholder: 'mail.example.org', required: true });
  const message = h('div', { role: 'status' });
  const add = h(
    'form',
    {
      class: 'add-domain',
      onsubmit: async (event: Event) => {
        event.preventDefault();
        try {
          const created = (await api('POST', '/v0/domains', { domain: name.value.trim() })) as unknown as DomainView;
          location.hash = `#/domains/${encodeURIComponent(created.domain_id)}`;
        } catch (err) {
          message.replaceChildren(status((err as Error).message, 'error'));
        }
      },
    },
    h('label', { for: 'new-domain' }, 'Add a domain'),
    name,
    h('button', { type: 'submit' }, 'Add'),
    message,
  );
  try {
    const page = await api('GET', '/v0/domains?limit=100');
    const domains = page.domains as DomainView[];
    list.replaceChildren(
      h('h2', {}, 'Domains'),
      add,
      domains.length
        ? h(
            'ul',
            {},
            ...domains.map((d) =>
              h(
                'li',
                {},
                h(
                  'a',
                  {
                    href: `#/domains/${encodeURIComponent(d.domain_id)}`,
                    'aria-current': d.domain_id === selected ? 'true' : false,
                  },
                  d.domain,
                ),
              ),
            ),
          )
        : status('No custom domains yet.'),
    );
  } catch (err) {
    list.replaceChildren(h('h2', {}, 'Domains'), status((err as Error).message, 'error'));
  }
  if (selected === undefined) return;
  const base = `/v0/domains/${encodeURIComponent(selected)}`;
  const show = (d: DomainView) => {
    const verifyMessage = h('div', { role: 'status' });
    const zone = h('div', { class: 'zone' });
    detail.replaceChildren(
      h('h2', {}, d.domain),
      h('p', {}, 'Status: ', h('strong', { id: 'domain-status' }, d.status ?? ''), d.reason ? ` (${d.reason})` : ''),
      h(
        'table',
        { class: 'records' },
        h('caption', {}, 'Records to publish at your DNS provider'),
        h(
          'thead',
          {},
          h('tr', {}, ...['Type', 'Name', 'Value', 'Status', 'Copy'].map((c) => h('th', { scope: 'col' }, c))),
        ),
        h(
          'tbody',
          {},
          ...(d.records ?? []).map((r) =>
            h(
              'tr',
              {},
              h('td', {}, r.type),
              h('td', {}, r.name, ' ', copyButton(r.name, `Copy the name of the ${r.type} record`)),
              h('td', { class: 'value' }, r.priority !== undefined ? `${r.priority} ${r.value}` : r.value),
              h('td', {}, r.status),
              h('td', {}, copyButton(r.value, `Copy the value of the ${r.type} record ${r.name}`)),
            ),
          ),
        ),
      ),
      h(
        'div',
        { class: 'actions' },
        h(
          'button',
          {
            type: 'button',
            id: 'verify-domain',
            onclick: async () => {
              verifyMessage.replaceChildren(status('Looking the records up…'));
              try {
                show((await api('POST', `${base}/verify`)) as unknown as DomainView);
              } catch (err) {
                verifyMessage.replaceChildren(status((err as Error).message, 'error'));
              }
            },
          },
          'Verify now',
        ),
        h(
          'button',
          {
            type: 'button',
            id: 'zone-file',
            onclick: async () => {
              const text = await apiText('GET', `${base}/zone-file`);
              zone.replaceChildren(h('pre', {}, text), copyButton(text, 'Copy the zone file'));
            },
          },
          'Zone file',
        ),
      ),
      verifyMessage,
      zone,
    );
  };
  try {
    show((await api('GET', base)) as unknown as DomainView);
  } catch (err) {
    detail.replaceChildren(status((err as Error).message, 'error'));
  }
}

interface KeyItem {
  api_key_id: string;
  prefix: string;
  name: string;
  pod_id?: string;
  inbox_id?: string;
  created_at: string;
}

/** API keys: the ones this key may see, a new one (its secret shown once), revoke. */
async function renderKeys(): Promise<void> {
  const section = h(
    'section',
    { class: 'keys', 'aria-label': 'API keys' },
    h('h2', {}, 'API keys'),
    status('Loading…'),
  );
  setPanes(h('div', { class: 'panes single' }, section));
  const name = h('input', { id: 'key-name', name: 'name', required: true });
  const inbox = h('input', { id: 'key-inbox', name: 'inbox', placeholder: 'every inbox of the key' });
  const readOnly = h('input', { id: 'key-read-only', name: 'read-only', type: 'checkbox' });
  const created = h('div', { id: 'created-key', role: 'status' });
  const form = h(
    'form',
    {
      class: 'add-key',
      onsubmit: async (event: Event) => {
        event.preventDefault();
        const place = inbox.value.trim()
          ? `/v0/inboxes/${encodeURIComponent(inbox.value.trim())}/api-keys`
          : '/v0/api-keys';
        const permissions = readOnly.checked
          ? { inbox_read: true, message_read: true, draft_read: true, domain_read: true, webhook_read: true }
          : undefined;
        try {
          const key = await api('POST', place, { name: name.value.trim(), ...(permissions ? { permissions } : {}) });
          const secret = key.api_key as string;
          created.replaceChildren(
            h('p', {}, 'The new key, shown this once: copy it now.'),
            h('code', { class: 'secret' }, secret),
            copyButton(secret, 'Copy the new key'),
          );
          await listKeys();
        } catch (err) {
          created.replaceChildren(status((err as Error).message, 'error'));
        }
      },
    },
    h('label', { for: 'key-name' }, 'Name'),
    name,
    h('label', { for: 'key-inbox' }, 'Only this inbox (optional)'),
    inbox,
    h('label', {}, readOnly, ' Read only'),
    h('button', { type: 'submit' }, 'Create key'),
  );
  const table = h('div', {});
  async function listKeys(): Promise<void> {
    try {
      const keys = (await api('GET', '/v0/api-keys?limit=100')).api_keys as KeyItem[];
      table.replaceChildren(
        h(
          'table',
          { class: 'key-list' },
          h(
            'thead',
            {},
            h('tr', {}, ...['Name', 'Prefix', 'Scope', 'Created', 'Revoke'].map((c) => h('th', { scope: 'col' }, c))),
          ),
          h(
            'tbody',
            {},
            ...keys.map((k) =>
              h(
                'tr',
                { 'data-key': k.api_key_id },
                h('td', {}, k.name),
                h('td', {}, h('code', {}, `${k.prefix}…`)),
                h('td', {}, k.inbox_id ?? k.pod_id ?? 'organization'),
                h('td', {}, new Date(k.created_at).toLocaleString()),
                h(
                  'td',
                  {},
                  h(
                    'button',
                    {
                      type: 'button',
                      class: 'revoke',
                      'aria-label': `Revoke ${k.name}`,
                      onclick: async () => {
                        if (!window.confirm(`Revoke the key "${k.name}"? Programs using it stop working at once.`))
                          return;
                        try {
                          await api('DELETE', `/v0/api-keys/${encodeURIComponent(k.api_key_id)}`);
                          await listKeys();
                        } catch (err) {
                          created.replaceChildren(status((err as Error).message, 'error'));
                        }
                      },
                    },
                    'Revoke',
                  ),
                ),
              ),
            ),
          ),
        ),
      );
    } catch (err) {
      table.replaceChildren(status((err as Error).message, 'error'));
    }
  }
  section.replaceChildren(h('h2', {}, 'API keys'), form, created, table);
  await listKeys();
}

async function start(): Promise<void> {
  try {
    session = (await api('GET', '/console/session')) as unknown as Session;
    await renderConsole();
  } catch {
    renderSignIn();
  }
}

void start();
