// Before `npm ci`: is this Node new enough for the proxy that package-lock.json pins?
// (npm's own engine-strict error names one package; this names the fix.)
const { engines } = require("./package.json");
const need = Number(/>=\s*(\d+)/.exec(engines.node)[1]);
const [major] = process.versions.node.split(".").map(Number);
if (major < need) {
  console.error(
    `Node.js ${process.version} is too old for the hub's proxy: hub/package-lock.json pins ` +
      `configurable-http-proxy for Node >= ${need}. Install a newer Node (apt-get install ` +
      `nodejs on Debian 13, or NodeSource / nvm), or pin an older proxy in hub/package.json.`,
  );
  process.exit(1);
}
