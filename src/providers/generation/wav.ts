/** RIFF/WAVE with one PCM `fmt ` chunk and one `data` chunk: 16-bit little-endian, mono. */
export function encodeWav(samples: Int16Array, sampleRate: number): Buffer {
  const dataSize = samples.length * 2;
  const out = Buffer.alloc(44 + dataSize);
  out.write('RIFF', 0, 'latin1');
  out.writeUInt32LE(36 + dataSize, 4);
  out.write('WAVE', 8, 'latin1');
  out.write('fmt ', 12, 'latin1');
  out.writeUInt32LE(16, 16); // fmt chunk size for PCM
  out.writeUInt16LE(1, 20); // PCM
  out.writeUInt16LE(1, 22); // channels
  out.writeUInt32LE(sampleRate, 24);
  out.writeUInt32LE(sampleRate * 2, 28); // byte rate
  out.writeUInt16LE(2, 32); // block align
  out.writeUInt16LE(16, 34); // bits per sample
  out.write('data', 36, 'latin1');
  out.writeUInt32LE(dataSize, 40);
  for (let i = 0; i < samples.length; i++) out.writeInt16LE(samples[i]!, 44 + i * 2);
  return out;
}

/**
 * The duration of a WAV file, or null when it is not one. Streaming encoders (OpenAI's speech
 * endpoint among them) write a placeholder size (0xFFFFFFFF) into the `data` header because they
 * do not know the length yet, so the bytes actually present bound the size.
 */
export function wavDurationMs(bytes: Buffer): number | null {
  if (bytes.length < 12 || bytes.toString('latin1', 0, 4) !== 'RIFF' || bytes.toString('latin1', 8, 12) !== 'WAVE') return null;
  let byteRate = 0;
  for (let at = 12; at + 8 <= bytes.length; ) {
    const id = bytes.toString('latin1', at, at + 4);
    const size = bytes.readUInt32LE(at + 4);
    if (id === 'fmt ' && at + 20 <= bytes.length) byteRate = bytes.readUInt32LE(at + 16);
    if (id === 'data') return byteRate > 0 ? Math.round((Math.min(size, bytes.length - at - 8) / byteRate) * 1000) : null;
    at += 8 + size + (size % 2); // chunks are padded to an even length
  }
  return null;
}
