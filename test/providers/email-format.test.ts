import { expect } from 'chai';
import { sendInvitationEmail } from '../../src/invitations/email.ts';
import type { Deps } from '../../src/platform/deps.ts';
import { escapeHtml, htmlFromText, subjectLine } from '../../src/providers/email/format.ts';
import { SandboxEmailProvider } from '../../src/providers/email/sandbox.ts';
import { testConfig } from '../support/config.ts';
import { createOrganization } from '../support/organizations.ts';
import { newUser } from '../support/server.ts';
import { useServer } from '../support/suite.ts';

describe('e-mail bodies escape what users named', () => {
  const ctx = useServer();

  it('escapes HTML and keeps paragraphs and line breaks in the HTML part', () => {
    expect(escapeHtml(`<a href="x">'&'</a>`)).to.equal('&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;');
    expect(htmlFromText('Hi <b>\nthere\n\nBye & go')).to.equal(
      '<!doctype html>\n<html><body>\n<p>Hi &lt;b&gt;<br>\nthere</p>\n<p>Bye &amp; go</p>\n</body></html>\n',
    );
    expect(subjectLine('Acme\r\nBcc: x@example.test\u0007')).to.equal('Acme Bcc: x@example.test');
  });

  it('the invitation e-mail carries an escaped HTML part; the subject is one line', async () => {
    const owner = newUser({ name: 'Mallory <img src=x onerror=alert(1)>' });
    const org = await createOrganization(ctx.server, owner, '<script>alert(1)</script> & Co');
    const invited = await ctx.server.request('post', `/organizations/${org}/invitations`, {
      token: owner.token,
      body: { email: `guest-${Date.now()}@example.test`, role: 'member' },
    });
    expect(invited.status, JSON.stringify(invited.body)).to.equal(201);
    const invitationId: string = invited.body.invitation.id;
    // Stored before names were checked: a control character must not split the subject header.
    await ctx.db('organizations').where({ id: org }).update({ name: '<script>alert(1)</script> & Co\r\nBcc: spy@example.test' });

    const deps = { config: testConfig(), db: ctx.db, providers: { email: new SandboxEmailProvider(ctx.db) } } as unknown as Deps;
    const sent = await sendInvitationEmail(deps, invitationId);
    expect(sent.sent).to.equal(true);
    const row = await ctx
      .db('email_outbox')
      .where({ idempotency_key: `invitation:${invitationId}` })
      .first();
    expect(row, 'outbox row').to.not.equal(undefined);
    expect(row.subject).to.equal('Mallory <img src=x onerror=alert(1)> invited you to <script>alert(1)</script> & Co Bcc: spy@example.test');
    expect(row.html_body).to.contain('Mallory &lt;img src=x onerror=alert(1)&gt; invited you to join &lt;script&gt;alert(1)&lt;/script&gt; &amp; Co');
    expect(row.html_body).not.to.contain('<script>');
    expect(row.html_body).not.to.contain('<img');
  });
});
