/**
 * The start of a command that takes no arguments: `--help` (or `-h`) prints its usage and exits 0;
 * any other argument prints the usage to stderr and exits 2. Both before any work starts.
 */
export function answerUsage(usage: string, argv: readonly string[] = process.argv.slice(2)): void {
  const text = usage.endsWith('\n') ? usage : `${usage}\n`;
  if (argv.length === 0) return;
  if (argv.every((arg) => arg === '--help' || arg === '-h')) {
    process.stdout.write(text);
    process.exit(0);
  }
  process.stderr.write(`unknown argument: ${argv.find((arg) => arg !== '--help' && arg !== '-h')}\n${text}`);
  process.exit(2);
}
