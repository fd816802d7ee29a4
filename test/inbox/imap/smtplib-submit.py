"""Submits one message with Python's smtplib (test/inbox/submission.test.ts): prints JSON."""
import json
import smtplib
import ssl
import sys
from email.message import EmailMessage

mode, host, port, user, password, to, bcc, cafile = sys.argv[1:9]
msg = EmailMessage()
msg["From"] = user
msg["To"] = to
msg["Subject"] = f"smtplib {mode}"
msg.set_content(f"Sent with smtplib over {mode}.")
out = {}
if mode == "implicit":
    context = ssl.create_default_context(cafile=cafile)
    context.check_hostname = False
    s = smtplib.SMTP_SSL(host, int(port), context=context)
else:
    s = smtplib.SMTP(host, int(port))
    if mode == "starttls":
        context = ssl.create_default_context(cafile=cafile)
        context.check_hostname = False
        s.starttls(context=context)
s.ehlo()
out["login"] = s.login(user, password)[0]
out["refused"] = s.send_message(msg, from_addr=user, to_addrs=[to, bcc])
s.quit()
print(json.dumps(out))
