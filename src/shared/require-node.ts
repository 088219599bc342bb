/**
 * Imported first by src/main.ts: an older Node fails later with an error that names none of this
 * (undici, a dependency, reads an API Node 24 added while it loads), so say which Node to use.
 */
const REQUIRED_MAJOR = 24;
const major = Number(process.versions.node.split('.')[0]);
if (major < REQUIRED_MAJOR) {
  console.error(
    `this service needs Node ${REQUIRED_MAJOR}, and this is Node ${process.versions.node}: start it with \`npm start\` ` +
      `(npm runs the Node ${REQUIRED_MAJOR} that \`npm ci\` installs as a dev dependency), or install Node ${REQUIRED_MAJOR}`,
  );
  process.exit(1);
}
