"""A mail script's session with Python's imaplib (test/inbox/imap-clients.test.ts): prints JSON."""
import imaplib
import json
import sys

host, port, user, password = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
out = {}
m = imaplib.IMAP4(host, port)
out["capabilities"] = sorted(m.capabilities)
out["login"] = m.login(user, password)[0]
typ, boxes = m.list()
out["list"] = [b.decode() for b in boxes]
typ, data = m.select("INBOX")
out["exists"] = int(data[0])
typ, data = m.uid("SEARCH", None, "UNSEEN")
out["unseen"] = [int(x) for x in data[0].split()]
typ, data = m.uid("FETCH", "1:*", "(UID FLAGS BODY.PEEK[HEADER.FIELDS (SUBJECT)])")
out["subjects"] = [part[1].decode().strip() for part in data if isinstance(part, tuple)]
typ, data = m.fetch("1", "(BODYSTRUCTURE RFC822.SIZE INTERNALDATE)")
out["structure"] = data[0].decode()
typ, data = m.fetch("1", "(BODY[TEXT])")
out["text_has_body"] = b"imaplib" in data[0][1]
typ, data = m.fetch("1", "(FLAGS)")
out["flags_after_body"] = data[0].decode()
typ, data = m.store("2", "+FLAGS", "(\\Deleted)")
out["store_deleted"] = data[0].decode()
typ, data = m.expunge()
out["expunged"] = [d.decode() for d in data if d]
typ, data = m.status("Trash", "(MESSAGES UIDNEXT)")
out["trash"] = data[0].decode()
out["create"] = m.create("Archive")[0]
try:
    m.uid("FETCH", "1", "(BODY[9.9.HEADER.BAD])")
    out["bad_section"] = "OK"
except imaplib.IMAP4.error as e:
    out["bad_section"] = "BAD"
out["noop"] = m.noop()[0]
m.close()
out["logout"] = m.logout()[0]
print(json.dumps(out))
