from offprompt.cli import main

raise SystemExit(main())
