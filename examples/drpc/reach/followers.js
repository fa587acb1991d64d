// followers: the second bolt of the reach function, in Node (a plain bolt, any number of tasks).
// Gets [request, tweeter] and emits [request, follower] for every account following the tweeter;
// the request id goes on first, as it came.
const fs = require('fs');
const path = require('path');
const { BasicBolt } = require('multilang');

const DATA = path.join(__dirname, 'data.json');

new BasicBolt({
  initialize() {
    const data = JSON.parse(fs.readFileSync(DATA, 'utf8'));
    if (typeof data.followers !== 'object' || data.followers === null) {
      throw new Error(`${DATA}: 'followers' must map each account to a list of accounts`);
    }
    this.followers = new Map(Object.entries(data.followers));
  },

  process(tuple, emit) {
    const [request, tweeter] = tuple.values;
    for (const follower of this.followers.get(tweeter) || []) emit([request, follower]);
  },
}).run();
