import type { Context } from 'koa';

/**
 * Answers a stored image (a logo, a cover) as its bytes: the stored type, a short private cache
 * (the URL carries a version that changes with the image), and `nosniff`, so a browser never runs
 * uploaded bytes as anything but the image type checked at upload.
 */
export function answerImage(ctx: Context, image: { body: Buffer; contentType: string }): void {
  ctx.type = image.contentType;
  ctx.set('Cache-Control', 'private, max-age=300');
  ctx.set('X-Content-Type-Options', 'nosniff');
  ctx.body = image.body;
}
