#!/bin/bash
# DiscreteBC on the gain-40 model's rephrase data (honest and grounded), 3 seeds, 40,000 steps -- a measurement, not published
export PYTHONPATH=/work/main/src IMAGINEBENCH_HOME=/work/h55b
cd /work/main
while ! grep -q "^rc=" /work/logs/s55/gen-rel40.log 2>/dev/null; do sleep 10; done
/tmp/fresh/.venv/bin/python /work/logs/s55/cells2.py BabyAI-v0 bc:rephrase:imaginary > /work/logs/s55/cell-bc-rel40.log 2>&1 &
/tmp/fresh/.venv/bin/imaginebench imagine ground --env BabyAI-v0 --profile small --level rephrase --threads 1 > /work/logs/s55/ground-rel40.log 2>&1; echo rc=$? >> /work/logs/s55/ground-rel40.log
/tmp/fresh/.venv/bin/python /work/logs/s55/cells2.py BabyAI-v0 bc:rephrase:imaginary-grounded > /work/logs/s55/cell-bcg-rel40.log 2>&1 &
wait; date; echo done
