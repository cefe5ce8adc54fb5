-- tests/real/xfer.lua — a sysbench script: transfers between a few hot
-- accounts, so that most transactions wait for another's row lock
-- (tests/real/mariadb.sh).
--
-- Table acct(id, bal, ops): every transaction moves 1 from one account to
-- another and adds 1 to both accounts' ops, locking the two rows in id
-- order (so no deadlock is possible). Invariants whatever the interleaving:
-- sum(bal) = 0 and sum(ops) = 2 x the transactions committed.
--
-- InnoDB puts a transaction that waits for a row lock to sleep on a
-- condition variable under lock_sys.wait_mutex (pthread_cond_timedwait),
-- and the committing holder's release wakes it: with 32 clients on 16 rows
-- that is most transactions. A lost wake-up shows as a 50 s lock wait
-- timeout (error 1205), which the caller does not ignore.
--
--   sysbench xfer.lua --accounts=16 prepare | run | cleanup

sysbench.cmdline.options = {
	accounts = { "Number of accounts (hot rows)", 16 },
}

function prepare()
	local con = sysbench.sql.driver():connect()
	con:query("DROP TABLE IF EXISTS acct")
	con:query([[CREATE TABLE acct (id INT PRIMARY KEY, bal BIGINT NOT NULL,
		ops BIGINT NOT NULL) ENGINE=InnoDB]])
	for i = 1, sysbench.opt.accounts do
		con:query(string.format("INSERT INTO acct VALUES (%d, 0, 0)", i))
	end
end

function cleanup()
	sysbench.sql.driver():connect():query("DROP TABLE IF EXISTS acct")
end

function thread_init()
	con = sysbench.sql.driver():connect()
end

function thread_done()
	con:disconnect()
end

local function move(id, sign)
	con:query(string.format("UPDATE acct SET bal = bal %s 1, ops = ops + 1 WHERE id = %d",
		sign, id))
end

function event()
	local n = sysbench.opt.accounts
	local from = sysbench.rand.uniform(1, n)
	local to = sysbench.rand.uniform(1, n - 1)
	if to >= from then
		to = to + 1
	end
	con:query("BEGIN")
	if from < to then
		move(from, "-")
		move(to, "+")
	else
		move(to, "+")
		move(from, "-")
	end
	con:query("COMMIT")
end
