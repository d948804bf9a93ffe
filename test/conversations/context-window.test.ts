import { expect } from 'chai';
import { countTokens } from 'gpt-tokenizer';
import { ContextWindowTooSmall, droppedNote, fitPrompt, type PromptMessage } from '../../src/conversations/context/window.ts';

/** Counted here as OpenAI counts a chat prompt (3 framing tokens a message, 3 priming the reply), independently of the code under test. */
const tokensOf = (m: PromptMessage) => {
  const { role, content, ...rest } = m as PromptMessage & Record<string, unknown>;
  return 3 + countTokens(role) + countTokens(content ?? '') + (Object.keys(rest).length > 0 ? countTokens(JSON.stringify(rest)) : 0);
};
const promptOf = (messages: PromptMessage[]) => messages.reduce((sum, m) => sum + tokensOf(m), 3);
/** The window less the 5% margin. */
const usable = (window: number) => window - Math.ceil(window * 0.05);

/** A message of about `words` words, distinct by `n`. */
const words = (n: number, count: number) => Array.from({ length: count }, (_, i) => `word${n}x${i}`).join(' ');
const turn = (n: number, count = 20): PromptMessage => ({ role: n % 2 === 0 ? 'user' : 'assistant', content: `Message ${n}: ${words(n, count)}` });

describe('fitting a turn into the context window (fitPrompt)', () => {
  it('a history that fits is sent whole, after the system context, and counted as OpenAI counts it', () => {
    const history = [turn(0), turn(1), turn(2)];
    const fit = fitPrompt({ system: 'Knowledge: the sky is green here.', history, window: 8192 });
    expect(fit.messages).to.deep.equal([{ role: 'system', content: 'Knowledge: the sky is green here.' }, ...history]);
    expect(fit.record).to.deep.equal({
      window: 8192,
      tokens: promptOf(fit.messages),
      answer_tokens: 1024,
      messages: 3,
      dropped_messages: 0,
      truncated_messages: 0,
      system_truncated: false,
      tools_tokens: 0,
    });
    expect(fit.cappedMaxTokens).to.equal(undefined);
  });

  it('a longer history keeps the newest messages that fit, drops the oldest and says how many', () => {
    const history = Array.from({ length: 60 }, (_, n) => turn(n, 40));
    const window = 2000;
    const fit = fitPrompt({ system: null, history, window, maxTokens: 300 });
    const kept = fit.record.messages;
    expect(kept).to.be.within(5, 59);
    expect(fit.record.dropped_messages).to.equal(60 - kept);
    expect(fit.messages).to.deep.equal([{ role: 'system', content: droppedNote(60 - kept) }, ...history.slice(60 - kept)]);
    expect(fit.messages[0]!.content).to.equal(`${60 - kept} earlier messages of this conversation were left out: they do not fit the model's context window.`);
    // Within the window with the answer's reserve; and as full as it can be: one more message would not fit.
    const tokens = promptOf(fit.messages);
    expect(fit.record.tokens).to.equal(tokens);
    expect(fit.answerTokens).to.equal(300);
    expect(tokens + 300).to.be.at.most(usable(window));
    expect(tokens + tokensOf(history[60 - kept - 1]!) + 300).to.be.greaterThan(usable(window));
  });

  it('an empty history is the system context alone (or nothing)', () => {
    expect(fitPrompt({ system: null, history: [], window: 1000 })).to.deep.include({
      messages: [],
      record: {
        window: 1000,
        tokens: 3,
        answer_tokens: 475,
        messages: 0,
        dropped_messages: 0,
        truncated_messages: 0,
        system_truncated: false,
        tools_tokens: 0,
      },
    });
    const withSystem = fitPrompt({ system: 'Be brief.', history: [], window: 1000 });
    expect(withSystem.messages).to.deep.equal([{ role: 'system', content: 'Be brief.' }]);
    expect(withSystem.record.tokens).to.equal(promptOf(withSystem.messages));
  });

  it('a single message larger than the window is cut in its middle: its head and tail are sent, with a marker', () => {
    const question = `START ${words(1, 3000)} END?`;
    const window = 2000;
    const fit = fitPrompt({ system: null, history: [{ role: 'user', content: question }], window });
    expect(fit.record).to.include({ messages: 1, dropped_messages: 0, truncated_messages: 1 });
    expect(fit.messages).to.have.length(1);
    const sent = fit.messages[0]!.content!;
    expect(sent.startsWith('START word1x0 word1x1')).to.equal(true);
    expect(sent.endsWith('word1x2999 END?')).to.equal(true);
    expect(sent).to.match(/\n\[… cut to fit the context window: \d+ of \d+ tokens kept …\]\n/);
    expect(promptOf(fit.messages) + fit.answerTokens).to.be.at.most(usable(window));
  });

  it('a system context over its share (half the budget) is cut to it, its head kept; the history still fits', () => {
    const knowledge = `FIRST ${words(7, 4000)} LAST`;
    const window = 4000;
    const history = [turn(0), turn(1), turn(2)];
    const fit = fitPrompt({ system: knowledge, history, window });
    expect(fit.record).to.include({ system_truncated: true, messages: 3, dropped_messages: 0, truncated_messages: 0 });
    const system = fit.messages[0]!;
    expect(system.role).to.equal('system');
    expect(system.content!.startsWith('FIRST word7x0')).to.equal(true);
    expect(system.content).not.to.include('LAST');
    const budget = usable(window) - fit.answerTokens - 3;
    expect(tokensOf(system)).to.be.at.most(Math.floor(budget / 2));
    expect(fit.messages.slice(1)).to.deep.equal(history);
    expect(promptOf(fit.messages) + fit.answerTokens).to.be.at.most(usable(window));
  });

  it('tool results are cut to their budget (a quarter of the prompt budget, at most 4000), their other fields kept', () => {
    const result = { role: 'tool' as const, content: `RESULT ${words(3, 3000)}`, tool_call_id: 'call_1' };
    const history: PromptMessage[] = [turn(0), { role: 'assistant', content: null, tool_calls: [{ id: 'call_1' }] } as PromptMessage, result];
    const window = 8192;
    const fit = fitPrompt({ system: null, history, window });
    expect(fit.record).to.include({ messages: 3, dropped_messages: 0, truncated_messages: 1 });
    const sent = fit.messages[2] as typeof result;
    expect(sent.tool_call_id).to.equal('call_1');
    expect(sent.content.startsWith('RESULT word3x0')).to.equal(true);
    expect(sent.content).to.match(/\[… cut to fit the context window: \d+ of \d+ tokens kept …\]\n$/);
    const budget = usable(window) - 1024 - 3;
    expect(tokensOf(sent)).to.be.at.most(Math.floor(budget / 4));
    expect(tokensOf(sent)).to.be.greaterThan(Math.floor(budget / 4) - 40);
    expect(fit.messages.slice(0, 2)).to.deep.equal(history.slice(0, 2));
  });

  it('a tool result whose call was left out does not open the history', () => {
    const big = (n: number) => turn(n, 300);
    const history: PromptMessage[] = [
      big(0),
      { role: 'assistant', content: words(9, 300), tool_calls: [{ id: 'call_9' }] } as PromptMessage,
      { role: 'tool', content: 'short result', tool_call_id: 'call_9' } as PromptMessage,
      big(3),
      big(4),
    ];
    // Room for about three of these: the tool result would be the oldest kept, so it is dropped with its call.
    const window = Math.ceil((tokensOf(history[3]!) * 2 + tokensOf(history[2]!) + 60 + 200) / 0.95);
    const fit = fitPrompt({ system: null, history, window, maxTokens: 100 });
    expect(fit.record).to.include({ messages: 2, dropped_messages: 3 });
    expect(fit.messages).to.deep.equal([{ role: 'system', content: droppedNote(3) }, history[3], history[4]]);
  });

  it('a max_tokens over half the usable window is lowered to it, and the lower value is what is sent', () => {
    const fit = fitPrompt({ system: null, history: [turn(0)], window: 8192, maxTokens: 8192 });
    expect(fit.answerTokens).to.equal(Math.floor(usable(8192) / 2));
    expect(fit.cappedMaxTokens).to.equal(Math.floor(usable(8192) / 2));
    expect(fitPrompt({ system: null, history: [turn(0)], window: 8192, maxTokens: 500 }).cappedMaxTokens).to.equal(undefined);
  });

  it('a window too small for even the framing of the answered message is an error naming the window', () => {
    expect(() => fitPrompt({ system: null, history: [turn(0), turn(1)], window: 40 }))
      .to.throw(ContextWindowTooSmall)
      .with.property('message')
      .that.matches(/^the model's context window \(40 tokens\) cannot hold the message it is asked to answer/);
  });
});
