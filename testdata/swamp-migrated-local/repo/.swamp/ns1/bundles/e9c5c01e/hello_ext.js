// extensions/models/hello_ext.ts
const { z } = globalThis.__swamp_zod;
var model = {
  type: "@user/hello-ext",
  version: "2026.01.01.1",
  methods: {
    run: {
      description: "Run",
      arguments: z.object({}),
      execute: async () => ({
        dataHandles: [],
        greeting: "HELLO"
      })
    }
  }
};
export {
  model
};
