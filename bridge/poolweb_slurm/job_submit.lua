--[[
Poolweb's gate, Slurm's job_submit/lua plugin (docs/slurm.md, decision 127).

A job submitted to a gated partition is held by Slurm itself at submission: priority 0, a
hold (squeue: PENDING, reason JobHeldUser) that slurmctld saves with the job and keeps across
its restarts, and that only the bridge (root) lifts, with `scontrol release <id>`
(slurm_job_modify refuses it to anyone else). The job's comment says who decides, and once root
releases it, where it runs (in the release's own RPC: no comment call per granted job):

    $ squeue -h -o '%i %T %r %k'
    12 PENDING JobHeldUser poolweb: waiting for the bridge to register this job
    12 RUNNING None poolweb: granted, released on partition h100

Jobs of other partitions pass untouched. A job naming gated and ungated partitions together is
refused at sbatch time: Poolweb chooses the partition of a gated job when it grants it.

The gated partitions are read once, when Slurm loads this script, from `poolweb_gate.conf` next
to slurm.conf (or the file $POOLWEB_GATE_CONF names in slurmctld's environment):

    gated_partitions = { "bare-metal", "h100" }

Slurm loads the script again when its modification time changes: after editing the gate
config, `touch job_submit.lua`. A missing or unreadable config fails the load, loudly.

No network and no file I/O per job: slurmctld calls these functions under its locks.
]]

local HELD_COMMENT = "poolweb: waiting for the bridge to register this job"
local GRANTED_COMMENT = "poolweb: granted, released on partition "
local BRIDGE_UID = 0  -- the bridge runs as root on the controller (another account: with the bridge)

local function gate_config_path()
    local named = os.getenv("POOLWEB_GATE_CONF")
    if named ~= nil and named ~= "" then
        return named
    end
    local slurm_conf = os.getenv("SLURM_CONF") or "/etc/slurm/slurm.conf"
    return (string.match(slurm_conf, "^(.*)/[^/]*$") or ".") .. "/poolweb_gate.conf"
end

-- The config is Lua, run in an empty environment: it can set names and nothing else.
local function read_gated_partitions(path)
    local chunk, problem = loadfile(path)
    if chunk == nil then
        error("poolweb gate: cannot read " .. path .. ": " .. tostring(problem))
    end
    local config = {}
    setfenv(chunk, config)
    chunk()
    if type(config.gated_partitions) ~= "table" then
        error("poolweb gate: " .. path .. " sets no gated_partitions = { ... }")
    end
    local gated = {}
    for _, name in ipairs(config.gated_partitions) do
        gated[name] = true
    end
    return gated
end

local GATED = read_gated_partitions(gate_config_path())

-- The partitions a job asks for: its own list, or the default partition when it names none.
local function requested_partitions(partition, part_list)
    local names = {}
    if partition ~= nil and partition ~= "" then
        for name in string.gmatch(partition, "[^,]+") do
            table.insert(names, name)
        end
        return names
    end
    for name, part in pairs(part_list) do
        if part.flag_default == 1 then
            table.insert(names, name)
        end
    end
    return names
end

-- Splits the requested partitions into the gated and the others, each as "a,b" or "".
local function split_by_gate(names)
    local gated, others = {}, {}
    for _, name in ipairs(names) do
        table.insert(GATED[name] and gated or others, name)
    end
    return table.concat(gated, ","), table.concat(others, ",")
end

function slurm_job_submit(job_desc, part_list, submit_uid)
    local gated, others = split_by_gate(requested_partitions(job_desc.partition, part_list))
    if gated == "" then
        return slurm.SUCCESS
    end
    if others ~= "" then
        slurm.log_user("poolweb: gated by Poolweb: %s; not gated: %s; a job asks for one side only: "
            .. "sbatch -p %s (Poolweb decides) or sbatch -p %s", gated, others, gated, others)
        return slurm.ERROR
    end
    if job_desc.priority == 0 then
        -- sbatch -H is a hold its user may release, which would start the job without Poolweb.
        slurm.log_user("poolweb: partition %s is gated by Poolweb, which holds and releases its jobs itself; "
            .. "submit without -H/--hold", gated)
        return slurm.ERROR
    end
    job_desc.priority = 0
    job_desc.comment = HELD_COMMENT
    return slurm.SUCCESS
end

-- A job waiting for Poolweb is one held (priority 0) in a gated partition. Slurm files the
-- plugin's hold as the user's own (JobHeldUser), which its user could lift with `scontrol release`;
-- so here only the bridge (root) may release such a job or move any job into a gated partition.
-- log_user is not shown for a modification in Slurm 22.05: the user reads "Access/permission
-- denied", the slurmctld log says why.
function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
    if modify_uid == BRIDGE_UID then
        -- The bridge's release of a granted job: its comment says so in the same RPC.
        local releasing = job_desc.priority ~= slurm.NO_VAL and job_desc.priority ~= 0 and job_rec.priority == 0
        if releasing and job_desc.comment == nil and split_by_gate(requested_partitions(job_rec.partition, part_list)) ~= "" then
            job_desc.comment = GRANTED_COMMENT .. job_rec.partition
        end
        return slurm.SUCCESS
    end
    if job_desc.partition ~= nil then
        local gated, _ = split_by_gate(requested_partitions(job_desc.partition, part_list))
        if gated ~= "" then
            slurm.log_info("poolweb gate: uid %d may not move job %u into gated partition %s; sbatch -p %s",
                modify_uid, job_rec.job_id, gated, gated)
            return slurm.ESLURM_ACCESS_DENIED
        end
    end
    local waiting, _ = split_by_gate(requested_partitions(job_rec.partition, part_list))
    if job_desc.priority ~= slurm.NO_VAL and job_rec.priority == 0 and waiting ~= "" then
        slurm.log_info("poolweb gate: uid %d may not release job %u: it waits for Poolweb", modify_uid,
            job_rec.job_id)
        return slurm.ESLURM_ACCESS_DENIED
    end
    return slurm.SUCCESS
end

slurm.log_info("poolweb gate: loaded, gating partitions from %s", gate_config_path())
return slurm.SUCCESS
