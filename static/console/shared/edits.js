// Changes to the draft document (api.md §1) as the editor makes them. Each keeps the document
// consistent the way a person means it: a renamed pool is renamed wherever it is referred to, a
// deleted one takes its connections and pool-scoped quota rows with it. Whether the result is
// valid is the API's to say (Validate), not this module's.

const list = (value) => (Array.isArray(value) ? value : []);

export function add(doc, kind, entry) {
  doc[kind] = [...list(doc[kind]), entry];
}

export function update(doc, kind, index, entry) {
  const before = doc[kind][index].name;
  doc[kind][index] = entry;
  if (before && entry.name !== before) rename(doc, kind, before, entry.name);
}

function rename(doc, kind, from, to) {
  if (kind === "pools") {
    for (const profile of list(doc.profiles)) {
      for (const connection of list(profile.connections)) if (connection.pool === from) connection.pool = to;
    }
    for (const policy of list(doc.policies)) {
      for (const quota of list(policy.quotas)) if (quota.scope === from) quota.scope = to;
    }
  } else if (kind === "profiles") {
    for (const pool of list(doc.pools)) pool.execution_order = list(pool.execution_order).map((p) => (p === from ? to : p));
  } else {
    for (const profile of list(doc.profiles)) profile.policies = list(profile.policies).map((p) => (p === from ? to : p));
  }
}

// What deleting the entry also removes, for the confirmation: a list of sentences.
export function consequences(doc, kind, index) {
  const name = doc[kind][index].name;
  if (kind === "pools") {
    const profiles = list(doc.profiles).filter((p) => list(p.connections).some((c) => c.pool === name));
    const quotas = list(doc.policies).flatMap((p) => list(p.quotas).filter((q) => q.scope === name));
    return [profiles.length && `its connections to ${profiles.map((p) => p.name).join(", ")}`,
            quotas.length && `${quotas.length} quota row${quotas.length > 1 ? "s" : ""} scoped to it`].filter(Boolean);
  }
  if (kind === "profiles") return [];
  const users = list(doc.profiles).filter((p) => list(p.policies).includes(name));
  return users.length ? [`its place in the policy rank of ${users.map((p) => p.name).join(", ")}`] : [];
}

export function remove(doc, kind, index) {
  const [entry] = doc[kind].splice(index, 1);
  const name = entry.name;
  if (kind === "pools") {
    for (const profile of list(doc.profiles)) profile.connections = list(profile.connections).filter((c) => c.pool !== name);
    for (const policy of list(doc.policies)) policy.quotas = list(policy.quotas).filter((q) => q.scope !== name);
  } else if (kind === "profiles") {
    for (const pool of list(doc.pools)) pool.execution_order = list(pool.execution_order).filter((p) => p !== name);
  } else {
    for (const profile of list(doc.profiles)) profile.policies = list(profile.policies).filter((p) => p !== name);
  }
}

export function connect(doc, profileIndex, pool, name) {
  const profile = doc.profiles[profileIndex];
  profile.connections = [...list(profile.connections), name ? { pool, name } : { pool }];
}

export function disconnect(doc, profileIndex, pool) {
  const profile = doc.profiles[profileIndex];
  profile.connections = list(profile.connections).filter((c) => c.pool !== pool);
  for (const entry of list(doc.pools)) {
    if (entry.name === pool) entry.execution_order = list(entry.execution_order).filter((p) => p !== profile.name);
  }
}

// A list's new order, as the board shows it: in full (api.md §1 lets an execution order leave
// connected profiles out; the editor writes what it shows).
export function reorder(doc, which, ownerIndex, names) {
  if (which === "execution") {
    doc.pools[ownerIndex].execution_order = names;
  } else if (which === "connections") {
    const profile = doc.profiles[ownerIndex];
    const by = new Map(list(profile.connections).map((c) => [c.pool, c]));
    profile.connections = names.map((pool) => by.get(pool));
  } else {
    doc.profiles[ownerIndex].policies = names;
  }
}
